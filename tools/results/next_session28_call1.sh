#!/usr/bin/env bash
# Prepared in session 27 for session 28's first call (not run).  Device, repository root:
#   OUT=$OUT bash tools/results/next_session28_call1.sh
# The GPU test files on HEAD: session 27's routing change (dense fp8 at 17-32 rows on the
# narrow kernel under auto, 1692764) and the narrow producer's lookahead and rope (7b7551f)
# have not run through the dense file; the forced-portable files last ran at ece11ed.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
(PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm0.txt 2>&1); say "warm HEAD: $(head -1 /tmp/warm0.txt)"
check_tree . narrow narrow
check_tree . ring ring
GPU_FILE_TIMEOUT=240 gpu_files HEAD dense fp8 sparse
memcheck_sparse HEAD
PORTABLE_TIMEOUT=300 portable fp8 sparse
cat "$L"
