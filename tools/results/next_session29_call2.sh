#!/usr/bin/env bash
# Prepared in session 28 for session 29 (not run).  Device, repository root:
#   OUT=$OUT bash tools/results/next_session29_call2.sh
# Sparse h16 splits (NOTES session 28, next 1): the narrow kernel at b32 h16 lost to the ring
# (41 vs 38 us at P=4, session 28 call 5): P 1, 2, 4, 8 on each schedule, b32 and b64.
set -u
export PYTHONUNBUFFERED=1
. tools/results/device_steps.sh
begin_call
for m in narrow ring; do
  echo "== split sweep, $m" >> "$L"
  MLA_CUPY_HOPPER_SCHEDULE=$m PYTHONPATH=. timeout 90 python3 tools/split_sweep.py \
    sparse_ds_mla_b32_sq1_h16:1,2,4,8 sparse_ds_mla_b64_sq1_h16:1,2,4 2>&1 | grep -v "^#" | cut -c1-120 >> "$L"
done
say "sweeps"
cat "$L"
