#!/usr/bin/env bash
# Session 32, call 7 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session32_call7.sh
# Call 6 profiled FlashMLA only (--peer replaces ours): the same cases, ours.
# FlashMLA's (tools/kernel_times.py under ncu, serialised, L2 flushed, real clocks).
# Prediction: our decode carries the gap (the combine within ~2 us of FlashMLA's).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests:/tmp/site timeout 420 python3 tools/kernel_times.py ds_h128_sq1_ragged ds_h64_sq1_ragged \
  b128_sq2_h128_varlen_causal ds_h32_sq1_uniform --calls 5 >> "$L" 2>&1
say "kernel_times $?"
cat "$L"
