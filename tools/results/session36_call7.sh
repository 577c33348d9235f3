#!/usr/bin/env bash
# Session 36, call 7 (device, repository root):
#   OUT=$OUT bash tools/results/session36_call7.sh
# Call 6: warpgroup 2's mbarriers were made ~1.6 us after work found (b32 h128 2.30 -> 3.90,
# b1 0.74 -> 2.34), with or without the metadata in L2; the lookup took 0.5-2.6 us more.
# session36_loader_probe2.py splits the 1.6 us with register-held timestamps (no stamp's
# global store for the fence to wait on): split_keys' range, the mbarriers made, the fence.
# Prediction: split_keys' range ~0.1-0.3 us after work found unless its constants miss; the
# fence (fence.mbarrier_init + fence.proxy.async: MEMBAR.ALL.CTA) most of the rest.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/ft2 next_seesaw_first_tile_in_setup_pf.patch
(cd /tmp/ft2 && PYTHONPATH=.:tests timeout 90 python3 tools/results/session36_loader_probe2.py >> "$L" 2>&1)
say "loader probe 2 $?"
cat "$L"
