#!/usr/bin/env bash
# Session 34, call 7 (device, repository root):  OUT=$OUT bash tools/results/session34_call7.sh
# Call 6's ours: kernel_times.py --peer profiles the peer instead of us (the peers' numbers
# are in call 6).  Prediction: decode h64 ragged ~178 (FlashMLA 169.6), uniform ~170 (159.3),
# h32 uniform ~165 (155.4); combine within 2 us of FlashMLA's (10.4, 8.1, 5.7).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 200 python3 tools/kernel_times.py ds_h64_sq1_ragged ds_h64_sq1_uniform \
  ds_h32_sq1_uniform --calls 5 2>&1 | grep "mla_" >> "$L"
say "kernel_times $?"
cat "$L"
