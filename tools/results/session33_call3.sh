#!/usr/bin/env bash
# Session 33, call 3 (device, repository root):  OUT=$OUT bash tools/results/session33_call3.sh
# Segment mode for the dense ring (MLA_CUPY_SPLIT=segments; opt-in): its producer's ring
# and mbarrier phases run on across a share's segments, warpgroup 0 loads the next
# segment's Q under its last segment's end.  Why: call 2's ncu (DeepSeek h64 uniform):
# FlashInfer runs 132 persistent CTAs where our splits use 128 SMs, and the ragged rows
# pay a second wave's CTA starts (0.91-0.95 on six README rows).
# 1. The GPU tests of segment mode (the ring's new test, the narrow's, balanced splits,
#    the schedule test).  Prediction: all pass.
# 2. Two rounds, auto (balanced splits) against segments, the six ring rows.
#    Prediction: ragged rows -5 to -8% (h64 ~199 -> ~185, h32 ~188 -> ~177); uniform
#    rows within 1% (the aligned cut keeps P whole pieces a sequence: 128 shares).
# 3. The whole dense GPU file (the split path's code changed too).  Prediction: all pass.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "segment_mode or balanced or schedule" > $OUT/dense_seg.log 2>&1
say "segment tests exit $?: $(tail -1 $OUT/dense_seg.log)"
grep -a "^FAILED\|Error\|assert" $OUT/dense_seg.log | head -20 >> "$L"
C="ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h32_sq1_ragged ds_h32_sq1_uniform ds_h16_sq2_ragged ds_h16_sq2_uniform"
for r in 1 2; do
  for split in auto segments; do
    echo "== $split ($r)" >> "$L"; MLA_CUPY_SPLIT=$split PYTHONPATH=. bench
  done
  say "round $r"
done
PYTHONPATH=.:tests timeout $((590 - SECONDS + T0)) python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_gpu_dense.py > $OUT/dense_all.log 2>&1
say "dense file exit $?: $(tail -1 $OUT/dense_all.log)"
grep -a "^FAILED" $OUT/dense_all.log | head -20 >> "$L"
cat "$L"
