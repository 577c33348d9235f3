#!/usr/bin/env bash
# Session 35, call 1 (prepared in session 34, not run; device, repository root):
#   OUT=$OUT bash tools/results/next_session35_call1.sh
# Session 34's call 8: the ring at 64 rows takes the same time with no key read at all
# (producer_ceiling nokeys: DeepSeek h64 uniform 180.8 full / 179.5 without key reads): its
# math and hand-overs are the bound (warpgroup 0 computes every S and softmax; warpgroup 1
# waits for P).  The seesaw has both warpgroups compute S on alternate tiles, but at 64 rows
# its two 64-key buffers exposed the load latency (session 32: h64 uniform 199.7 against the
# ring's 173.4).  next_seesaw_32x4.patch: the seesaw with the ring's four 32-key buffers
# (its loader warps step over the tiles of their parity; the protocol model with four
# stages passes and catches an eager loader; CPU: no spills, no C75xx).
# 1. checked: hopper_check --schedule seesaw and the dense file in the patched tree (the
#    patch changes every seesaw variant, h128 rows included).  Prediction: all pass.
# 2. Two rounds, HEAD / patched: DeepSeek h64 under MLA_CUPY_HOPPER_SCHEDULE=seesaw (the
#    patched tree) against HEAD's auto (the ring, segment mode); the seesaw rows (h128,
#    b32, b1, varlen) auto in both.  Prediction: h64 uniform ~170 us (ring 180), ragged
#    ~200 (balanced splits, ring 195: segment mode for it is the step after); the h128 rows
#    within ±3% (the N = 32 S wgmmas against deeper buffers).
# 0. First, HEAD's seesaw (64-key tiles) forced at 64 rows under tools/phase_probe.py: its
#    pair loop's time a tile at h64 (no L2 sharing between row tiles) against h128's ~2.0 us.
#    FlashMLA, the same organisation, streams h64 at ~31 GB/s an SM (2.4 us a 64-key tile);
#    if ours is near that, its h64 deficit (199.7 us, session 32) is split mode's fixed
#    costs, and segment mode for the seesaw is the road; if it is well above, the loads are.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py \
  --cases ds_h64_sq1_uniform ds_h128_sq1_uniform >> "$L" 2>&1
say "phase probe $?"
# 0b. Where the ring's ~2450 clocks a tile go (ring_probe.py --tile, new in session 34):
#    warpgroup 0's step and warpgroup 1's P V of a tile mid-segment, clock64.
PYTHONPATH=.:tests timeout 60 python3 tools/ring_probe.py ds_h64_sq1_uniform --tile 40 >> "$L" 2>&1
say "ring tile probe $?"
GPU_FILE_TIMEOUT=200 checked_patch /tmp/s32 next_seesaw_32x4.patch s32 seesaw dense
for r in 1 2; do
  C="ds_h64_sq1_uniform ds_h64_sq1_ragged"
  echo "== HEAD auto ($r)" >> "$L"; PYTHONPATH=. bench
  echo "== s32 seesaw forced ($r)" >> "$L"; (cd /tmp/s32 && MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=. bench)
  C="ds_h128_sq1_uniform ds_h128_sq1_ragged b32_h128_s4096 b1_h128_s65536 b128_sq2_h128_varlen_causal"
  BENCH_TIMEOUT=150 bench_trees . /tmp/s32
done
cat "$L"
