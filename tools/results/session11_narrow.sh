#!/usr/bin/env bash
# Session 11: the narrow schedule's first run (keys as the MMA's M, 16-row tiles;
# kernels/hopper/mla_decode_narrow.cu.j2).  hopper_check and the GPU test first (a hang
# ends at the timeout), then ring vs narrow twice on the h16 rows.
# Prediction (narrow_probe --rate: its math alone 61 keys/us/SM, the ring's 23.5): b128
# h16 bf16 321 -> ~290-300 us (memory floor 288, FlashInfer 290); b8 h16 41 -> ~36;
# ds_h16 rows likewise ~10% faster.
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
timeout 200 python3 tools/hopper_check.py --schedule narrow > $OUT/check_narrow.txt 2>&1; echo "[exit $?]" >> $OUT/check_narrow.txt
grep "correctness\|exit\|^FAIL" $OUT/check_narrow.txt | head >> "$L"
grep -q "^\[exit 0\]" $OUT/check_narrow.txt || { cat "$L"; exit 0; }
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py -k narrow \
  > $OUT/tests_narrow.txt 2>&1; echo "[exit $?]" >> $OUT/tests_narrow.txt
tail -2 $OUT/tests_narrow.txt >> "$L"
C="b128_h16_s8192 b8_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged"
for sch in ring narrow ring narrow; do echo "== $sch" >> "$L"
  MLA_CUPY_HOPPER_SCHEDULE=$sch timeout 100 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 \
    | grep -v "^#" | cut -c1-120 >> "$L"; done
cat "$L"
