#!/usr/bin/env bash
# Session 30, call 3.  Device, repository root:  OUT=$OUT bash tools/results/session30_call3.sh
# Call 2's phases (b8 h16): 3.7 us entry -> prologue done, then 4.0 us before the loader's
# first copies, where one DRAM round (the page id) was expected (~1.3 us: Q's cp.async took
# 1.4).  Finer stamps (tools/narrow_phases.py: the scan's steps, the loader's segment and
# first page id) on HEAD and on next_shares_first_loads.patch.
# Prediction: batch_size ~1.3 us, each scan pass ~0.3-1 us; the loader's segment found
# ~0.5 us (L1/L2 hits), its page ~1.3 us.  And the same with Q and the metadata read back
# into L2 after the flush (--warm data: only the kernel's code cold) and without the flush
# (--warm all): if the chain is instruction fetch (the code flushed from L2 with the data),
# `data` stays near `none`; if it is the metadata's DRAM rounds, `data` falls to `all`.
set -u
export PYTHONUNBUFFERED=1
. tools/results/device_steps.sh
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
patched /tmp/fl next_shares_first_loads.patch
for w in none data all; do
  PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 16 --warm $w --cases b8_h16_s8192 >> "$L" 2>&1
  say "phases $w exit $?"
done
PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 16 --cases b128_h16_s8192 >> "$L" 2>&1
(cd /tmp/fl && PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 16 --cases b8_h16_s8192 >> "$L" 2>&1)
say "fl phases exit $?"
cat "$L"
