#!/usr/bin/env bash
# Session 18, call 2 (device, repository root; .whl carried):
#   OUT=$OUT COMMIT=<hash> bash tools/results/session18_call2.sh
# What session 17 left unrun on a GPU: the full suite after the 16-byte address check
# (f089246's seg_info fix, test_balanced_splits' one-head page-3 batch), the quick
# sanitizer sweep (tools/gpu_run.sh, HOST=0), then the dense, fp8 and sparse GPU tests on
# the forced portable path (MLA_CUPY_BACKEND=portable).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say
HOST=0 TEST_TIMEOUT=290 SANITIZE_TIMEOUT=290 COMMIT=$COMMIT OUT=$OUT bash tools/gpu_run.sh > $OUT/gpu_run.txt 2>&1
say "gpu_run exit $?"
export PYTHONPATH=.:tests
for f in dense fp8 sparse; do
  ( MLA_CUPY_BACKEND=portable timeout 250 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
      tests/test_gpu_$f.py > /tmp/port_$f.log 2>&1; echo "[portable $f exit $?]" >> /tmp/port_$f.log ) &
done
wait
for f in dense fp8 sparse; do tail -2 /tmp/port_$f.log >> "$L"; done
cat /tmp/port_*.log > $OUT/portable.log
say "portable done"
cat "$L"; head -12 $OUT/tests.log
