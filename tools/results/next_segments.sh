#!/usr/bin/env bash
# Prepared in session 12 (CPU-checked; the version before the fix hung on the H200, run 6):
# segment mode with the fix (a segment's last tile frees its V-chunk slots).
# Prediction: ds_h16_sq1 ragged 294 (splits, run 6) -> ~175-185 us; the uniform rows within
# 2% of the splits; b8 h16 (8 sequences over 132 shares) within 1 us.
# Usage (device, repository root): OUT=$OUT bash tools/results/next_segments.sh  (timeout 600)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
rm -rf /tmp/ps && cp -r . /tmp/ps && (cd /tmp/ps && git apply tools/results/next_segments.patch) \
  || { echo "apply failed" >> "$L"; cat "$L"; exit 0; }
cd /tmp/ps
timeout 90 python3 tools/warm_kernel_cache.py > /dev/null 2>&1
timeout 100 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; echo "[exit $?]" >> $OUT/check.txt
grep "correctness\|exit\|^FAIL" $OUT/check.txt | head >> "$L"
# the segment tests first (a hang shows here, under its own timeout)
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py \
  -k "segment_mode or narrow_schedule or independent" > $OUT/tests.txt 2>&1; echo "[tests exit $?]" >> $OUT/tests.txt
tail -3 $OUT/tests.txt >> "$L"
grep -q "^\[tests exit 0\]" $OUT/tests.txt || { cat "$L"; exit 0; }
C="ds_h16_sq1_ragged ds_h16_sq1_uniform b128_h16_s8192 b8_h16_s8192 ds_h32_sq1_ragged"
for r in 1 2; do
  echo "== segments" >> "$L"
  timeout 50 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
  echo "== partitions" >> "$L"
  MLA_CUPY_SPLIT=partitions timeout 50 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
done
(timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -m gpu -q -p no:cacheprovider \
   tests/test_gpu_dense.py -k "segment_mode and null" 2>&1 | tail -2) >> "$L"
cat "$L"
