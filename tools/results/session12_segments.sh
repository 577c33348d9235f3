#!/usr/bin/env bash
# Session 12, run 5: segment mode (equal shares of the batch's tiles, the narrow kernel).
# Prediction: DeepSeek h16 s_q1 ragged 242.5 -> ~175-185 us (total tiles / 132 at the
# uniform row's rate, plus a combine); uniform rows within 2% of the splits.
# Usage (device, repository root): OUT=$OUT bash tools/results/session12_segments.sh
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
( time python3 tools/warm_kernel_cache.py ) 2>&1 | tail -4 >> "$L"
timeout 150 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; echo "[exit $?]" >> $OUT/check.txt
grep "correctness\|exit\|^FAIL" $OUT/check.txt | head >> "$L"
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py \
  -k "segment or narrow or matches_reference or independent" > $OUT/tests.txt 2>&1; echo "[tests exit $?]" >> $OUT/tests.txt
tail -3 $OUT/tests.txt >> "$L"
grep -q "^\[tests exit 0\]" $OUT/tests.txt || { cat "$L"; exit 0; }
C="ds_h16_sq1_ragged ds_h16_sq1_uniform b128_h16_s8192 b8_h16_s8192 ds_h32_sq1_ragged ds_h16_sq2_ragged"
for r in 1 2; do
  echo "== segments (auto)" >> "$L"
  timeout 90 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
  echo "== partitions" >> "$L"
  MLA_CUPY_SPLIT=partitions timeout 90 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
done
(timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -m gpu -q -p no:cacheprovider \
   tests/test_gpu_dense.py -k "segment_mode and 64 and causal and not sliding" 2>&1 | tail -2) >> "$L"
cat "$L"
