#!/usr/bin/env bash
# Session 35, call 1 (prepared in session 34; device, repository root):
#   OUT=$OUT bash tools/results/session35_call1.sh
# Session 34's call 8: the ring at 64 rows takes the same time with no key read at all
# (producer_ceiling nokeys: DeepSeek h64 uniform 180.8 full / 179.5 without key reads): its
# math and hand-overs are the bound (warpgroup 0 computes every S and softmax; S at N = 32
# is shared-memory bound).  FlashMLA's sm90 kernel has our seesaw's organisation (two
# 64-key buffers refilled half by half by their last readers, S on alternate tiles, TMA
# with an evict_first hint, no L2 prefetch) and streams h64 at ~2.4 us a 64-key tile (31
# GB/s an SM); our seesaw forced at h64 took 199.7 us in session 32 (~3.1 us a tile).
# 0. HEAD's seesaw forced at h64 and at h128 under tools/phase_probe.py: its time a tile.
#    Prediction: h128 ~2.0 us, h64 ~3 us (memory, not math: the h128 CTAs share each
#    tile's DRAM read through L2).
# 0b. ring_probe.py --tile 40 (new in session 34) on the ring's h64 uniform: where its
#    ~2450 clocks a 32-key tile go.  Prediction: S(N+1) queued -> done ~1100-1500 clocks.
# 1. Three seesaw variants beside HEAD, two rounds, each case checked against the
#    reference by the bench first (2 sequences); h64 under MLA_CUPY_HOPPER_SCHEDULE=seesaw
#    (HEAD's auto, the ring, in its own rows), h128 rows auto:
#    - next_seesaw_evict_first.patch (TMA_EVICT_FIRST, FlashMLA's hint): h64 -3 to -10%,
#      h128 within 2% (the two row tiles read a tile at about the same time);
#    - next_seesaw_no_l2_prefetch.patch (the loader's L2 prefetch a pair ahead off):
#      h64 -0 to -5% (the prefetch's bytes compete with the refills), h128 +2 to +5%
#      (session 20 measured it -0 to -11% there);
#    - next_seesaw_32x4.patch (four 32-key buffers; protocol model with four stages
#      passes): h64 ~-10% (more in flight), h128 within ±3%.
# If one wins at h64, call 2: hopper_check --schedule seesaw and the dense file on it, then
# the ring against the seesaw at h32 / h64 (uniform, ragged) for the routing rule.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py \
  --cases ds_h64_sq1_uniform ds_h128_sq1_uniform >> "$L" 2>&1
say "phase probe $?"
PYTHONPATH=.:tests timeout 60 python3 tools/ring_probe.py ds_h64_sq1_uniform --tile 40 >> "$L" 2>&1
say "ring tile probe $?"
patched /tmp/ef next_seesaw_evict_first.patch
patched /tmp/np next_seesaw_no_l2_prefetch.patch
patched /tmp/s32 next_seesaw_32x4.patch
for r in 1 2; do
  for t in . /tmp/ef /tmp/np /tmp/s32; do
    echo "== $t seesaw forced ($r)" >> "$L"
    (cd $t && C="ds_h64_sq1_uniform ds_h64_sq1_ragged" MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=. bench)
    echo "== $t auto ($r)" >> "$L"
    (cd $t && C="ds_h128_sq1_uniform ds_h128_sq1_ragged b32_h128_s4096" BENCH_TIMEOUT=120 PYTHONPATH=. bench)
  done
  say "round $r"
done
echo "== HEAD auto (the ring) at h64" >> "$L"
C="ds_h64_sq1_uniform ds_h64_sq1_ragged" PYTHONPATH=. bench
# 2. The aligned cut's threshold (SEGMENT_CUT_TILES = 8, fitted on the narrow kernel in
#    session 13, before the schedule records and the compact start): at 1, b128 h16 (the
#    narrow kernel; 128 sequences on 128 of 132 SMs) takes the equal cut, every other README
#    row keeps its cut; at 0, the uniform DeepSeek rows take it too.  Prediction: at 1, b128
#    h16 300 -> ~296 (3 tiles fewer a share against a boundary of ~16-row Q and partial);
#    at 0, ds h16 uniform within 1%, ds h64 uniform (the ring, ~7 us a boundary) +2-4%.
patched /tmp/c1 next_segment_cut_1.patch
patched /tmp/c0 next_segment_cut_0.patch
C="b128_h16_s8192 ds_h16_sq1_uniform ds_h64_sq1_uniform" BENCH_TIMEOUT=120 bench_trees . /tmp/c1 /tmp/c0
cat "$L"
