#!/usr/bin/env bash
# Session 25, call 4 (ece11ed: bench warm-up, fp16 MMAs for fp8 rows in the narrow kernel).
# Device, repository root:  OUT=$OUT bash tools/results/session25_call4.sh
# Every Hopper GPU test file, then the forced-portable fp8 and sparse files (the portable
# dense file follows in call 5 on the warm machine).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
GPU_FILE_TIMEOUT=240 gpu_files HEAD dense
GPU_FILE_TIMEOUT=60 gpu_files HEAD sparse fp8 hardening host quantize
PORTABLE_TIMEOUT=150 portable fp8 sparse
cat "$L"
