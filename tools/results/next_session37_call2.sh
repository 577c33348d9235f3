#!/usr/bin/env bash
# Session 37, call 2 (prepared in session 36, not run; device, repository root):
#   OUT=$OUT bash tools/results/next_session37_call2.sh
# 1. b1's loss under every start change of session 36 (calls 4, 5, 8: +1.5-2.7% while the
#    pair loop's entry did not move).  phase_probe.py's phases (entry, Q landed, first S, loop
#    end, peeled pairs end, epilogue end; the CTAs' end times) at b1 on HEAD and on the tree
#    of next_seesaw_first_tile_in_setup_pf.patch.  Prediction: the same loop time a tile;
#    the extra ~1 us in the CTAs' end spread (a late CTA) or the epilogue, not the loop.
# 2. The seesaw's h128 tile (~1.79 us against FlashMLA's ~1.65, session 34): phase_probe.py
#    --pair 3 and --pair 3 --per-warp at DeepSeek h128 uniform and b128 h128 on HEAD: which
#    hand-over waits.  Prediction: warpgroup 1's wait for P(a) or warpgroup 0's for the
#    buffer's release, ~150-250 clocks a pair.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/ft2 next_seesaw_first_tile_in_setup_pf.patch
for t in . /tmp/ft2; do
  echo "== phases $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --cases b1_h128_s65536 b1_h128_s65536:64 >> "$L" 2>&1)
done
say "b1 phases"
for c in ds_h128_sq1_uniform b128_h128_s8192; do
  echo "== pair 3 $c" >> "$L"
  PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --pair 3 --cases $c >> "$L" 2>&1
  PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --pair 3 --per-warp --cases $c >> "$L" 2>&1
done
say "pair probes"
cat "$L"
