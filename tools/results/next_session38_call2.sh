#!/usr/bin/env bash
# Session 38, call 2 (prepared in session 37 after its device budget; CPU-checked, not run):
#   OUT=$OUT bash tools/results/next_session38_call2.sh
# The seesaw's two row tiles of a 128-row group as a cluster of two CTAs, each box loaded
# once from L2 and multicast into both (next_seesaw_multicast.patch, /tmp/mc): at b128 h128
# the SMs take in 2 x 1.21 GB from L2 in ~450 us (5.4 TB/s), and a refill's flight from L2
# was 700-1,700 clocks (session 37).  Each CTA issues every other chunk of a half (the
# issue halves too), both CTAs arm all of a half's chunks on their own full barriers, a
# half's empty barrier counts both CTAs' releases (a remote arrival from the peer), and a
# cluster barrier after the mbarrier init and before leaving.  An EXPERIMENT: every seesaw
# variant becomes a cluster kernel (grids with an odd row-tile count fail to launch), so
# hopper_check is not run on it; the bench's own reference check of each timed row is its
# correctness evidence (rows of one token a cluster: the h128 rows, varlen's s_q 2 x 128).
# CPU: the 12 seesaw variants compile, no spills; 7 UTMALDG.4D.MULTICAST in the SASS.
# Predictions: if L2's output bounds the flight, the pair probe's pair 5,500 -> 4,700-5,000
# clocks and the h128 rows -5 to -10%; if not, flat or slower (each pair of CTAs moves at
# the slower one's pace).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/mc next_seesaw_multicast.patch
(cd /tmp/mc && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_mc.txt 2>&1)
say "warm mc: $(head -1 /tmp/warm_mc.txt)"
for c in ds_h128_sq1_uniform b128_h128_s8192; do
  echo "== pair 3 mc $c" >> "$L"
  (cd /tmp/mc && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --pair 3 --cases $c >> "$L" 2>&1)
done
say "pair probes"
C="ds_h128_sq1_uniform ds_h128_sq1_ragged b128_h128_s8192 b128_sq2_h128_varlen_causal b32_h128_s4096 b1_h128_s65536" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/mc
cat "$L"
