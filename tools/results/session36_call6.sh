#!/usr/bin/env bash
# Session 36, call 6 (device, repository root, .whl carried):
#   OUT=$OUT bash tools/results/session36_call6.sh
# 1. Calls 4-5: with the first tile issued inside the set-up, warpgroup 2's path from work
#    found (~2.1 us at b32 h128) to its first copies took ~3.7 us.  session36_loader_probe.py
#    (on /tmp/ft2) splits it: mbarriers made, the loader view (page divisor), the first
#    lookup returned, the copies issued.  Prediction: the lookup is most of it (~2-2.5 us,
#    a DRAM read of the lookup table after the L2 flush); with warm=data (metadata in L2)
#    it drops to ~0.5-1 us.
# 2. Every README peer row on HEAD (the narrow _evict_first twin landed in call 1).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/ft2 next_seesaw_first_tile_in_setup_pf.patch
(cd /tmp/ft2 && PYTHONPATH=.:tests timeout 90 python3 tools/results/session36_loader_probe.py >> "$L" 2>&1)
say "loader probe $?"
COMMIT=$(git rev-parse --short HEAD) peer_all_rows
cat "$L"
