#!/usr/bin/env bash
# Session 19, call 5 (device, repository root):  OUT=$OUT bash tools/results/session19_call5.sh
# Owed since 3223028 / 81c5df4 (cta_split in common/sequence.cuh.j2, which the portable
# kernels include): the dense, fp8 and sparse GPU tests on the forced portable path
# (MLA_CUPY_BACKEND=portable), at HEAD (PageDiv, the _warp_rows combine, which the
# portable path launches too).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, portable
portable dense fp8 sparse   # (device_steps.sh; as run, the same commands inline)
say "portable done"
cat "$L"
