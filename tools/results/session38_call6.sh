#!/usr/bin/env bash
# Session 38, call 6:  OUT=$OUT bash tools/results/session38_call6.sh
# The landed tree's dispatcher change (the `_multicast` variant axis and takes_multicast) under
# the host-path and hardening GPU files (graphs, DecodeSchedule records, torch tensors, bad
# input): predicted all pass, as at session 37's HEAD (host 11, hardening 62).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=150 gpu_files final host hardening
cat "$L"
