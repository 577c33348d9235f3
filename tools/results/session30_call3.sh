#!/usr/bin/env bash
# Session 30, call 3.  Device, repository root:  OUT=$OUT bash tools/results/session30_call3.sh
# Call 2's phases (b8 h16): 3.7 us entry -> prologue done, then 4.0 us before the loader's
# first copies, where one DRAM round (the page id) was expected (~1.3 us: Q's cp.async took
# 1.4).  Finer stamps (tools/narrow_phases.py: the scan's steps, the loader's segment and
# first page id) on HEAD and on next_shares_first_loads.patch.
# Prediction: batch_size ~1.3 us, each scan pass ~0.3-1 us; the loader's segment found
# ~0.5 us (L1/L2 hits), its page ~1.3 us.
set -u
export PYTHONUNBUFFERED=1
. tools/results/device_steps.sh
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
patched /tmp/fl next_shares_first_loads.patch
for d in . /tmp/fl; do
  echo "== $d" >> "$L"
  (cd $d && PYTHONPATH=.:tests timeout 90 python3 tools/narrow_phases.py --rows 16 --cases b8_h16_s8192 \
    b128_h16_s8192 >> "$L" 2>&1); say "$d phases exit $?"
done
cat "$L"
