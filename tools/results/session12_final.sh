#!/usr/bin/env bash
# Session 12, run 6: every GPU test file at this commit (segment mode, auto routing),
# the h16 rows beside FlashMLA and FlashInfer, segments against partitions, and
# memcheck of segment mode.  Usage (device, repository root, .whl carried):
#   COMMIT=<commit> OUT=$OUT bash tools/results/session12_final.sh
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
SANITIZE=0 HOST=0 TEST_TIMEOUT=230 timeout 280 bash tools/gpu_run.sh > $OUT/run.txt 2>&1
S=$OUT/split.txt; : > "$S"
timeout 110 bash tools/gpu_bench.sh ds_h16_sq1_ragged ds_h16_sq1_uniform b128_h16_s8192 b8_h16_s8192 \
  --repeats 20 > /dev/null 2>&1; echo "[bench exit $?]" >> "$S"
C="ds_h16_sq1_ragged ds_h16_sq1_uniform b128_h16_s8192 b8_h16_s8192 ds_h32_sq1_ragged"
echo "== partitions" >> "$S"
MLA_CUPY_SPLIT=partitions timeout 40 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$S"
echo "== segments" >> "$S"
timeout 40 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$S"
(timeout 50 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -m gpu -q -p no:cacheprovider \
   tests/test_gpu_dense.py -k "segment_mode and null" 2>&1 | tail -2) >> "$S"
head -12 $OUT/tests.log; grep -v "^#" $OUT/bench.log | cut -c1-160; cat "$S"
