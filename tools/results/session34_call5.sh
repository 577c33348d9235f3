#!/usr/bin/env bash
# Session 34, call 5 (device, repository root):  OUT=$OUT bash tools/results/session34_call5.sh
# The keys of a dense sequence whose rows fit one tile are read exactly once; with an L2
# evict_first policy on their loads, what is read again (the partials the combine merges,
# a split sequence's Q, the page table) should stay in L2 instead of going to DRAM and back.
# next_l2_evict_first_ring.patch: the ring's cp.async (gridDim.x == 1, dense);
# next_l2_evict_first_all.patch: that and the narrow kernel's TMA boxes.
# 1. hopper_check ring and narrow on the second (hints change no value).  Prediction: 0 failures.
# 2. Two rounds, HEAD / ring / all.  Prediction: the ring's DeepSeek rows (h32, h64, segment
#    mode, ~100 split sequences: ~12-16 MB of partials read back from DRAM today) -1 to -3%;
#    the narrow's h16 rows -0 to -2%; b128 h16 (one split, no partials) unchanged.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/evr next_l2_evict_first_ring.patch
patched /tmp/eva next_l2_evict_first_all.patch
check_tree /tmp/eva eva_ring ring
check_tree /tmp/eva eva_narrow narrow
C="ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h32_sq1_ragged ds_h32_sq1_uniform ds_h16_sq1_ragged ds_h16_sq1_uniform b128_h16_s8192 b8_h16_s8192"
BENCH_TIMEOUT=200 bench_trees . /tmp/evr /tmp/eva
cat "$L"
