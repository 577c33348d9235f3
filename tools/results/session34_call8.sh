#!/usr/bin/env bash
# Session 34, call 8 (device, repository root):  OUT=$OUT bash tools/results/session34_call8.sh
# Is the ring's tile rate at 64 rows the math's or the loads'?  producer_ceiling.py's new
# `nokeys` ablation: the ring's key copies zero-fill without reading (no key leaves DRAM),
# every hand-over, page lookup, MMA and softmax kept; (the tool also times the kernel without wgmma, as in session 33).
# Prediction (NOTES session 34): math-bound, nokeys within ~5% of the full kernel on h64
# uniform (179 us serialised); if the loads set the rate, nokeys ~130 us.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 220 python3 tools/producer_ceiling.py ds_h64_sq1_uniform ds_h32_sq1_uniform \
  ds_h64_sq1_ragged --ablate nokeys --keep-mma >> "$L" 2>&1
say "ceiling $?"
cat "$L"
