#!/usr/bin/env bash
# Session 12, run 3: the narrow kernel's fp8 producer with a ring of raw record tiles
# (NARROW_RAW_TILES = 2, and 3 in a copy) and per-chunk publishing.  Prediction: the
# single raw buffer kept ~42 KiB in flight per SM (1.9 TB/s); two tiles in flight:
# fp8_ds_mla b128 h16 356 -> ~210-230 us, fp8 374 -> ~220-250, sparse h16 128 -> ~80-90.
# Usage (device, repository root): OUT=$OUT bash tools/results/session12_raw_tiles.sh
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
timeout 150 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; echo "[exit $?]" >> $OUT/check.txt
grep "correctness\|exit\|^FAIL" $OUT/check.txt | head >> "$L"
grep -q "^\[exit 0\]" $OUT/check.txt || { cat "$L"; exit 0; }
timeout 60 python3 tools/warm_kernel_cache.py > /dev/null 2>&1
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py tests/test_gpu_sparse.py \
  -k narrow > $OUT/tests.txt 2>&1; echo "[tests exit $?]" >> $OUT/tests.txt
tail -2 $OUT/tests.txt >> "$L"
rm -rf /tmp/r3 && cp -r . /tmp/r3 && sed -i 's/^NARROW_RAW_TILES = 2$/NARROW_RAW_TILES = 3/' /tmp/r3/mla_cupy/render.py
(cd /tmp/r3 && timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py \
  tests/test_gpu_sparse.py -k "narrow and (fp8 or sparse)" 2>&1 | tail -1 | sed 's/^/raw3 tests: /') >> "$L"
C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 sparse_ds_mla_b128_sq1_h16"
for r in 1 2; do
  echo "== auto" >> "$L"
  timeout 80 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
  echo "== narrow raw 2" >> "$L"
  MLA_CUPY_HOPPER_SCHEDULE=narrow MLA_CUPY_BACKEND=hopper timeout 80 python3 tools/bench.py $C --repeats 20 \
    --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
  echo "== narrow raw 3" >> "$L"
  (cd /tmp/r3 && MLA_CUPY_HOPPER_SCHEDULE=narrow MLA_CUPY_BACKEND=hopper timeout 80 python3 tools/bench.py $C --repeats 20 \
    --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100) >> "$L"
done
(timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -m gpu -q -p no:cacheprovider \
   tests/test_gpu_dense.py -k "narrow_schedule_fp8 and 16 and causal" 2>&1 | tail -2) >> "$L"
cat "$L"
