#!/usr/bin/env bash
# Session 36, call 2 (prepared in session 35, ran in session 36; device, repository root):
#   OUT=$OUT bash tools/results/session36_call2.sh
# The seesaw's start.  Session 35 call 3: serialised, FlashMLA's decode is 4-5 us shorter
# than ours at b1 and b32 h128 (44.8 / 49.2, 70.2 / 75.0), our CTAs spending 13-14 us
# outside their tile loop (phase probe: entry -> Q 6.6 us, Q -> first S 5.4 at h128).
# At h128 every CTA's loader also prefetches the next pair into L2 as it issues its first
# copies: the start's burst is twice the bytes the first S needs.
# 1. phase_probe.py --start (new in session 35) on HEAD: where the start goes.  Prediction:
#    work found ~1 us, set-up's barrier ~1.5, the loader's first copies ~2.5, Q landed ~5-6,
#    first tile ~7-9, the pair loop ~10-12.
# 2. next_seesaw_first_prefetch_late.patch (/tmp/pf): the first pair's L2 prefetches wait for
#    the warp's own first copies to land.  hopper_check seesaw 0 failures; the start probe
#    again: first tile and loop entry ~1.5-2 us sooner; two rounds, HEAD / pf: b1 50.4 ->
#    ~48.5 (x1.19 against FlashMLA's 57.7), b32 h128 ~79 -> ~77.5, h128 rows -0.5 to -1%,
#    varlen and b128 h128 within 1%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --start \
  --cases b1_h128_s65536 b32_h128_s4096 ds_h128_sq1_uniform >> "$L" 2>&1
say "start probe HEAD $?"
patched /tmp/pf next_seesaw_first_prefetch_late.patch
check_tree /tmp/pf pf seesaw
(cd /tmp/pf && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --start \
  --cases b1_h128_s65536 b32_h128_s4096 ds_h128_sq1_uniform >> "$L" 2>&1)
say "start probe pf $?"
C="b1_h128_s65536 b32_h128_s4096 ds_h128_sq1_uniform ds_h128_sq1_ragged b128_sq2_h128_varlen_causal b128_h128_s8192" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/pf
cat "$L"
