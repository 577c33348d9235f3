#!/usr/bin/env bash
# Session 32, call 8 (device, repository root):  OUT=$OUT bash tools/results/session32_call8.sh
# Calls 6-7: FlashMLA's decode at 32 and 64 heads (one padded 64-row tile, its seesaw-like
# kernel) is 152 / 165 us against our narrow 32-row 173.5 and ring 186.4 (ds h32 uniform,
# h64 ragged).  SEESAW_MIN_ROWS = 65 dates from session 5 (h64 362 seesaw vs 350 ring,
# h32 360 vs 340), before the seesaw's loading warpgroup, PageDiv, the max slack and pa.
# Here: the forced seesaw at 32 and 64 rows beside auto (and the ring), two rounds.
# Prediction: unknown sign; the seesaw within 5% either way.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
C="ds_h64_sq1_uniform ds_h64_sq1_ragged ds_h32_sq1_uniform ds_h32_sq1_ragged ds_h16_sq1_ragged"
for r in 1 2; do
  for s in auto seesaw ring; do
    echo "== $s ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=$s PYTHONPATH=. bench
  done
  say "round $r"
done
cat "$L"
