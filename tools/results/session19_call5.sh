#!/usr/bin/env bash
# Session 19, call 5 (device, repository root):  OUT=$OUT bash tools/results/session19_call5.sh
# Owed since 3223028 / 81c5df4 (cta_split in common/sequence.cuh.j2, which the portable
# kernels include): the dense, fp8 and sparse GPU tests on the forced portable path
# (MLA_CUPY_BACKEND=portable), at HEAD (PageDiv, the _warp_rows combine, which the
# portable path launches too).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say
export PYTHONPATH=.:tests
for f in dense fp8 sparse; do
  ( MLA_CUPY_BACKEND=portable timeout 400 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
      tests/test_gpu_$f.py > /tmp/port_$f.log 2>&1; echo "[portable $f exit $?]" >> /tmp/port_$f.log ) &
done
wait
for f in dense fp8 sparse; do tail -2 /tmp/port_$f.log >> "$L"; done
cat /tmp/port_*.log > $OUT/portable.log
say "portable done"
cat "$L"
