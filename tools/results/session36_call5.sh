#!/usr/bin/env bash
# Session 36, call 5 (device, repository root):
#   OUT=$OUT bash tools/results/session36_call5.sh
# Call 4 (the first tile under the set-up, /tmp/ft): the copies went out ~1 us sooner (b32
# h128 6.8 -> 5.7 us, b1 4.7 -> 3.6) but their first chunk landed 2.6 us after them (0.8 at
# HEAD): the loader's lane 0 prefetched the keys' tensor map just before its first copy, so
# the copy waited for the descriptor.  Rows: varlen -1.1%, h128 uniform -0.7%, b32 -0.6%,
# b128 h128 -0.4%, b1 +0.4%, ragged flat.
# next_seesaw_first_tile_in_setup_pf.patch (/tmp/ft2): the same, the tensor map prefetched
# at the kernel's entry (UTMACCTL.PF first in the SASS), under cta_work's ~2 us.
# Predictions: hopper_check seesaw 0 failures (ft2); start probe ft2: first chunk landed
# ~0.8-1 us after the copies (b32 ~6.7, b1 ~4.5), the pair loop ~1.5 us sooner than ft;
# rows HEAD / ft / ft2: b1 52.1 -> ~50.5, b32 78.3 -> ~77, uniform / ragged -1%, varlen -1.2%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/ft next_seesaw_first_tile_in_setup.patch
patched /tmp/ft2 next_seesaw_first_tile_in_setup_pf.patch
check_tree /tmp/ft2 ft2 seesaw
for t in /tmp/ft2; do
  echo "== start probe $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --start \
    --cases b1_h128_s65536 b32_h128_s4096 ds_h128_sq1_uniform >> "$L" 2>&1)
done
say "start probe"
C="b1_h128_s65536 b32_h128_s4096 ds_h128_sq1_uniform ds_h128_sq1_ragged b128_sq2_h128_varlen_causal b128_h128_s8192" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/ft /tmp/ft2
cat "$L"
