#!/usr/bin/env bash
# Session 30, call 5.  Device, repository root:  OUT=$OUT bash tools/results/session30_call5.sh
# The fp8 file on HEAD (the compact epilogue landed: the fp8 narrow kernels share it; call 4
# ran the dense and sparse files on it, not this one).  Prediction: 12 passed.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=100 gpu_files HEAD fp8
cat "$L"
