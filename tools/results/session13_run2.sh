#!/usr/bin/env bash
# Session 13, call 2 (device, repository root, branch s13): segment mode with the aligned
# cut (sequence_shares picks equal shares or whole pieces of sequences, SEGMENT_CUT_TILES=8).
# Predictions: ragged rows as call 1 (183 / 229 us: the equal cut); the uniform rows and
# b8 within ~2 us of partitions (163.0 / 300.6 / 40.5: the aligned cut, P as split mode's).
# Usage: OUT=$OUT bash tools/results/session13_run2.sh  (timeout 600)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
t0=$(date +%s); stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*" >> "$L"; }
timeout 100 python3 tools/warm_kernel_cache.py > $OUT/warm.txt 2>&1; stamp "warm exit $?"
timeout 100 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; stamp "check exit $?"
grep "correctness\|^FAIL" $OUT/check.txt | head >> "$L"
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py \
  -k "segment_mode or narrow_schedule or independent or longest_first" > $OUT/tests.txt 2>&1; stamp "tests exit $?"
tail -3 $OUT/tests.txt >> "$L"
C="ds_h16_sq1_ragged ds_h16_sq1_uniform b128_h16_s8192 b8_h16_s8192 ds_h32_sq1_ragged ds_h32_sq1_uniform ds_h16_sq2_ragged"
b() { timeout 60 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"; }
for r in 1 2; do
  echo "== segments (auto)" >> "$L"; b; stamp
  echo "== partitions" >> "$L"; MLA_CUPY_SPLIT=partitions b; stamp
done
(timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -m gpu -q -p no:cacheprovider \
   tests/test_gpu_dense.py -k "segment_mode and null" 2>&1 | tail -2) >> "$L"; stamp sanitizer
cat "$L"
