#!/usr/bin/env bash
# Session 36, call 4 (device, repository root):
#   OUT=$OUT bash tools/results/session36_call4.sh
# The seesaw's first tile under the set-up.  Call 2's start probe at HEAD (b32 h128): work
# found 2.0 us, the set-up's barrier 3.8, Q landed 5.0-5.4, the loader's tile 0 copies issued
# 6.7, the pair loop entered 9.8-12.7: the keys' first bytes are asked for ~6.7 us into a
# CTA, DRAM serving only Q (4.7 MB, ~1.2 us) till then.  FlashMLA's decode is ~4.8 us shorter
# serialised (session 35).
# next_seesaw_first_tile_in_setup.patch (/tmp/ft): each loading warp makes its own
# mbarriers and issues its first tile's copies inside the set-up, before the barrier (SASS:
# the first UTMALDG before BAR.SYNC 0; 168 registers, no spills).
# Predictions:
# 1. hopper_check seesaw 0 failures.
# 2. start probe: tile 0's copies issued ~6.7 -> ~3 us (b32 h128), the first chunk landed
#    ~7 -> ~5, the pair loop ~10-12 -> ~8-9.
# 3. two rounds HEAD / ft, us: b1 ~51.8 -> ~49.5, b32 h128 ~78.7 -> ~76, DeepSeek h128
#    uniform / ragged -1%, varlen and b128 h128 -0.3 to -0.5%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/ft next_seesaw_first_tile_in_setup.patch
check_tree /tmp/ft ft seesaw
for t in . /tmp/ft; do
  echo "== start probe $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --start \
    --cases b1_h128_s65536 b32_h128_s4096 ds_h128_sq1_uniform >> "$L" 2>&1)
done
say "start probes"
C="b1_h128_s65536 b32_h128_s4096 ds_h128_sq1_uniform ds_h128_sq1_ragged b128_sq2_h128_varlen_causal b128_h128_s8192" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/ft
cat "$L"
