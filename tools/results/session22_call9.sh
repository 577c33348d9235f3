#!/usr/bin/env bash
# Session 22, call 9.  Device, repository root:  OUT=$OUT bash tools/results/session22_call9.sh
# The GPU files and memcheck on HEAD (the pair's prologue landed after call 8's check).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
for f in sparse fp8 hardening; do
  PYTHONPATH=.:tests timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$f.py > /tmp/t_$f.log 2>&1
  echo "[$f exit $?]" >> /tmp/t_$f.log; say "$f: $(tail -2 /tmp/t_$f.log | tr '\n' ' ')"
done
PYTHONPATH=. timeout 40 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py \
  > /tmp/memcheck.log 2>&1; say "memcheck exit $?: $(grep -h 'ERROR SUMMARY\|cases done' /tmp/memcheck.log | tr '\n' ' ')"
cat "$L"
