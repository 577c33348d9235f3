#!/usr/bin/env bash
# Session 16, call 8: balanced splits for the ring and seesaw (docs/spec.md §7; a split
# length from the batch's total keys, grid y 2x the host's P).  Call 6's forced-P sweep:
# DeepSeek h64 ragged P=2 313 us / P=4 210, h128 ragged P=1 505 / P=2 332, h64 uniform P=2
# 184 / P=4 201.  Predictions: h64 ragged ~210, h128 ragged ~330, uniform rows within 2%
# (the extra empty CTAs and, at P=1, the combine's launch), varlen h128 (s_q 2, ragged)
# 1079 -> ~1000.  Checked first (hopper_check ring and seesaw: two new ragged cases with one
# long sequence; the GPU tests of balanced splits, segment mode, longest first), then
# timed against MLA_CUPY_SPLIT=partitions (the host's P for every sequence: the old rule)
# in the same tree; the GPU tests last (the device budget is nearly spent).  Usage (device, repository root): OUT=$OUT bash tools/results/session16_call8.sh
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
PYTHONPATH=. timeout 80 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm"
for s in seesaw ring; do
  PYTHONPATH=. timeout 60 python3 tools/hopper_check.py --schedule $s > $OUT/check_$s.txt 2>&1; say "hopper_check $s exit $?"
  grep "correctness\|^FAIL" $OUT/check_$s.txt | head -4 >> "$L"
done
C="ds_h64_sq1_ragged ds_h128_sq1_ragged ds_h64_sq1_uniform b128_h128_s8192 b32_h128_s4096"
REPEATS=10; BENCH_TIMEOUT=50
echo "== balanced" >> "$L"; PYTHONPATH=. bench; say bench
echo "== MLA_CUPY_SPLIT=partitions" >> "$L"; MLA_CUPY_SPLIT=partitions PYTHONPATH=. bench; say bench
PYTHONPATH=.:tests timeout 80 python3 -m pytest -m gpu -q -p no:cacheprovider -x tests/test_gpu_dense.py \
  -k "balanced or segment_mode or longest or cuda_graph" > $OUT/tests.txt 2>&1
say "tests exit $? $(tail -1 $OUT/tests.txt)"; grep -E "FAILED|Error|SEED" $OUT/tests.txt | head -6 >> "$L"
cat "$L"
