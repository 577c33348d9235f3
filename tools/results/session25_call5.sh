#!/usr/bin/env bash
# Session 25, call 5, right after call 4 (warm machine and kernel cache):
#   OUT=$OUT bash tools/results/session25_call5.sh
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
[ -n "$(ls ~/.cupy/kernel_cache 2>/dev/null | head -1)" ] || { PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"; }
PORTABLE_TIMEOUT=${PORTABLE_TIMEOUT:-330} portable dense
cat "$L"
