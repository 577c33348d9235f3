#!/usr/bin/env bash
# Session 32, call 4 (device, repository root):  OUT=$OUT bash tools/results/session32_call4.sh
# How the 32-row narrow tile (HEAD's row split, 23 slots) depends on its ring's depth:
# next_exp_narrow_slots.patch caps the 32-row kernel's slots by MLA_EXP_NARROW_SLOTS
# (experiment only).  Call 2's alternate tiles ran on 18 slots (two tiles) and matched
# HEAD's 23 on uniform: if the row split loses >= 5% at 18 slots, the alternate tiles
# gain that much from a deeper ring (tile barriers would allow 22 slots).
# Prediction: 18 slots +5-10% on uniform, 20 +2-4%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/sl next_exp_narrow_slots.patch
C="ds_h32_sq1_uniform ds_h32_sq1_ragged"
for r in 1 2; do
  for n in 23 20 18; do
    echo "== slots $n ($r)" >> "$L"
    (cd /tmp/sl && MLA_EXP_NARROW_SLOTS=$n PYTHONPATH=. bench)
  done
  say "round $r"
done
cat "$L"
