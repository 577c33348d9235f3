#!/usr/bin/env bash
# Session 37, call 4 (device, repository root):  OUT=$OUT bash tools/results/session37_call4.sh
# Call 3: releasing b's left half first moved it ~650 clocks earlier, yet the pair stayed
# ~5550 clocks: S(a + 2)'s right half (released ~2410) landed only at ~5250, ~2800 clocks
# after its release.  session37_refill_probe.py splits release -> landed into the loader's
# wake (empty passed), its issue, and the flight, for each half of pair 4's tiles, at
# DeepSeek h128 uniform and b128 h128 (two row tiles read each tile; L2 prefetch a pair
# ahead) and at DeepSeek h64 uniform with the seesaw forced (one row tile; no prefetch).
# Prediction: wake + issue < 300 clocks; the flight ~2000-2500 clocks at h128 (the loads'
# latency under the load of 132 SMs), which makes the pair's two buffers too shallow.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 120 python3 tools/results/session37_refill_probe.py ds_h128_sq1_uniform b128_h128_s8192 \
  b32_h128_s4096 >> "$L" 2>&1
say "refill probe $?"
MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=.:tests timeout 60 python3 tools/results/session37_refill_probe.py \
  ds_h64_sq1_uniform >> "$L" 2>&1
say "refill probe h64 seesaw $?"
cat "$L"
