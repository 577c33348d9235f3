#!/usr/bin/env bash
# Session 37, call 1 (prepared in session 36, not run: its budget ran out; device, repository root):
#   OUT=$OUT bash tools/results/next_session37_call1.sh
# Session 36 call 7's steps without memory reads took 0.7-0.9 us each (work found -> split_keys' range,
# -> the mbarriers made).  Session 31 found the narrow kernel's start a chain of cold code
# (instructions fetched from DRAM after the bench's L2 flush).  session36_loader_probe2.py with
# the L2 flushed ("none") and not flushed ("all", the code and data left in L2).
# Prediction: with "all" those steps shrink to <= 0.2 us each, the lookup to ~0.5 us.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
L=$OUT/log.txt; : > "$L"; T0=$SECONDS   # begin_call without its cache warm-up (the probe compiles its own kernel)
patched /tmp/ft2 next_seesaw_first_tile_in_setup_pf.patch
(cd /tmp/ft2 && WARMS="none all" PYTHONPATH=.:tests timeout 120 python3 tools/results/session36_loader_probe2.py >> "$L" 2>&1)
say "loader probe 2 $?"
cat "$L"
