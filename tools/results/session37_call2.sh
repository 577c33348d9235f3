#!/usr/bin/env bash
# Session 37, call 2 (device, repository root):  OUT=$OUT bash tools/results/session37_call2.sh
# (prepared in session 36 as next_session37_call3.sh) Q's last 64-column chunk held as wgmma A fragments in the seesaw
# (next_seesaw_q_last_in_registers.patch at /tmp/ql; RS wgmma for that chunk of every S).
# Predictions: hopper_check seesaw 0 failures; the dense file passes; HEAD / ql: if S is
# shared-memory-bound, h128 uniform / ragged, b128 h128 and varlen -2 to -3%, b32 -1 to -2%;
# if not, flat.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=200 checked_patch /tmp/ql next_seesaw_q_last_in_registers.patch ql seesaw dense
C="ds_h128_sq1_uniform ds_h128_sq1_ragged b128_h128_s8192 b128_sq2_h128_varlen_causal b32_h128_s4096 b1_h128_s65536" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/ql
cat "$L"
