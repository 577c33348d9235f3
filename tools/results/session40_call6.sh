#!/usr/bin/env bash
# Session 40, call 6:  OUT=$OUT bash tools/results/session40_call6.sh
# The plain seesaw's `_segments` twin (`_hopper_seesaw_segments`: one CTA a share, a
# segment's token its 64 rows; the same kernel as the `_multicast` twin's segment mode
# without the cluster).  Reached with MLA_CUPY_HOPPER_SCHEDULE=seesaw and
# MLA_CUPY_SPLIT=segments at 64 heads, s_q 1 (`auto` runs the ring there).  Why: the seesaw
# streams h=64 at 2.33 us a 64-key tile without its L2 prefetch (session 35) against the
# ring's ~2.6, but its split mode lost the ragged batch to a second wave of CTAs (206 vs
# 192 us); segment mode has no second wave.
# 1. test_seesaw_segment_mode at 64 heads (both masks; NaN-filled workspace and slots,
#    permuted pages, ragged / short / empty / one long sequence / fp16 / aligned cut).
# 2. DeepSeek h64 rows: auto (the ring's segment mode), the forced seesaw (balanced splits)
#    and the forced seesaw's segment twin.
# Predictions: tests pass; the twin at h64 uniform ~172-177 us against the ring's ~181
# (-3 to -5%), ragged ~175-180 against ~196 (-8 to -11%); the forced seesaw's splits as
# session 35 (uniform ~176, ragged ~206).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=2 \
  tests/test_gpu_dense.py -k "seesaw_segment_mode and 64" > $OUT/gpu_h64.log 2>&1
say "h64 twin tests exit $?: $(tail -1 $OUT/gpu_h64.log)"
grep -E "^E " $OUT/gpu_h64.log | head -10 | cut -c1-300 >> "$L"
C="ds_h64_sq1_ragged ds_h64_sq1_uniform"
for r in 1 2; do
  echo "== auto ($r)" >> "$L"; PYTHONPATH=. bench
  echo "== seesaw splits ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=. bench
  echo "== seesaw segments ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=seesaw MLA_CUPY_SPLIT=segments PYTHONPATH=. bench
  say "round $r"
done
cat "$L"
