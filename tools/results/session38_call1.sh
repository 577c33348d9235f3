#!/usr/bin/env bash
# Session 38, call 1 (prepared in session 37 as next_session38_call2.sh; ran at 995d9b4):
#   OUT=$OUT bash tools/results/session38_call1.sh
# The seesaw's `_multicast` twin (next_seesaw_multicast_twin.patch, /tmp/mct): where a token's
# heads fill pairs of 64-row tiles (h 128, compiler.takes_multicast) the two row tiles run as
# a cluster of two CTAs; each box of keys is loaded once from L2 and multicast into both
# (each CTA's loading warps copy every other chunk of their half: the issue halves too), a
# half's empty barrier counts both CTAs' releases (the peer's arrives remotely), cluster
# barriers after the mbarrier init and before leaving.  Why: at b128 h128 the SMs take in
# 2 x 1.21 GB from L2 in ~450 us (5.4 TB/s), and a refill's flight from L2 was 700-1,700
# clocks of its 1,600-2,600 (session 37).  CPU: the 12 twins compile without spills (7
# UTMALDG.4D.MULTICAST a kernel), the plain seesaw's SASS is byte-identical, the protocol
# model of two CTAs neither hangs nor laps (and catches a release kept in its CTA and a
# loader that does not arm), 2651 CPU tests pass.  New GPU test:
# test_tile_pairs_of_one_token_run_the_multicast_twin.
# Predictions: hopper_check seesaw 0 failures, the dense file passes, memcheck 0 errors; the
# pair probe's pair 5,500 -> 4,700-5,000 clocks and the h128 rows -5 to -10% if L2's output
# bounds the flight; flat or slower if not (a cluster moves at its slower CTA's pace).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=220 checked_patch /tmp/mct next_seesaw_multicast_twin.patch mct seesaw dense
for c in ds_h128_sq1_uniform b128_h128_s8192; do
  echo "== pair 3 mct $c" >> "$L"
  (cd /tmp/mct && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --pair 3 --cases $c >> "$L" 2>&1)
done
(cd /tmp/mct && PYTHONPATH=.:tests timeout 60 python3 tools/results/session37_refill_probe.py ds_h128_sq1_uniform >> "$L" 2>&1)
say "probes"
C="ds_h128_sq1_uniform ds_h128_sq1_ragged b128_h128_s8192 b128_sq2_h128_varlen_causal b32_h128_s4096 b1_h128_s65536" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/mct
cat "$L"
