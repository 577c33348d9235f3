#!/usr/bin/env bash
# Session 34, call 6 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session34_call6.sh
# Where the ring's segment-mode rows spend their time against FlashMLA's: decode against
# combine (tools/kernel_times.py under ncu, serialised, L2 flushed, real clocks), and the
# probe's CTA ends on the uniform row (aligned cut, 128 CTAs).
# Prediction: our decode carries the gap (~+13 us on h64 ragged: 178 against FlashMLA's
# 164.8 of session 32), the combine within ~2 us of FlashMLA's (10.2).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
say "peers installed $?"
PYTHONPATH=.:tests:/tmp/site timeout 300 python3 tools/kernel_times.py ds_h64_sq1_ragged ds_h64_sq1_uniform \
  ds_h32_sq1_uniform --calls 5 --peer flashmla 2>&1 | grep -v "curand\|cupy_\|gen_seq" >> "$L"
say "kernel_times $?"
PYTHONPATH=.:tests timeout 60 python3 tools/ring_probe.py ds_h64_sq1_uniform >> "$L" 2>&1
cat "$L"
