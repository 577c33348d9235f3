#!/usr/bin/env bash
# Session 32, call 5 (device, repository root):  OUT=$OUT bash tools/results/session32_call5.sh
# The split rule on the rows furthest from the peers (DeepSeek h64 / h128 ragged 0.91 /
# 0.89, varlen 0.91; h64 uniform and b32 h128 for reference): forced num_partitions beside
# the dispatcher's (tools/split_sweep.py; each P checked against the chosen P's output).
# Prediction: the chosen P within 2% of the best on every row (the model was fitted on
# these shapes' neighbours); if not, the split model's constants move.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 400 python3 tools/split_sweep.py ds_h64_sq1_ragged:1,2,3,4,6 ds_h64_sq1_uniform:1,2,3,4 \
  ds_h128_sq1_ragged:1,2,3,4 b128_sq2_h128_varlen_causal:1,2,3 b32_h128_s4096:2,3,4,6 >> "$L" 2>&1
say "sweep $?"
cat "$L"
