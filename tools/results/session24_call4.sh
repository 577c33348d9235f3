#!/usr/bin/env bash
# Session 24, call 4.  Device, repository root:  OUT=$OUT bash tools/results/session24_call4.sh
# The tree with the max slack and P(a)' stored as P(a) (call 3: -1 to -3% on the seesaw rows):
# hopper_check of the seesaw, then the whole dense GPU file (it ran out of call 2's 200 s at
# 83%, every test before that passing: the new climbing-score tests take time in the reference).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
check_tree . pa seesaw
PYTHONPATH=.:tests timeout 330 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 --durations=8 \
  tests/test_gpu_dense.py > /tmp/t_dense.log 2>&1
say "dense exit $?: $(grep -h 'passed\|failed' /tmp/t_dense.log | tail -1)"
grep -h "FAIL\|Error" /tmp/t_dense.log | head -8 >> "$L"; grep -A10 "slowest" /tmp/t_dense.log | cut -c1-150 >> "$L"
cat "$L"
