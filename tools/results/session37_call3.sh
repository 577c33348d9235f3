#!/usr/bin/env bash
# Session 37, call 3 (device, repository root):  OUT=$OUT bash tools/results/session37_call3.sh
# Call 1's pair probe (DeepSeek h128 uniform, pair 3, clocks): warpgroup 0 queues P(b) V_L(b)
# at ~1970 but sees it retire only at ~3880, after waiting for a + 2's chunks 0-3, freed at
# ~1810 (its own P(a) V_L(a)) and refilled ~1.7k clocks later; b's chunks 0-3 are released
# only then, so warpgroup 1's S(b + 2) finishes at ~6170 and the tensor pipe idles between
# ~3900 and ~5600 for the landing.  next_seesaw_release_b_first.patch (/tmp/rf): warpgroup 0
# waits for P(b) V_L(b), releases b's chunks 0-3, then queues all of S(a + 2).
# Predictions: the new stamp "S(a+2) 0-3 (or all) queued" at HEAD ~3500-3800 (the landing);
# on rf "P(b)V_L(b) done" ~2900-3200 and the pair ~5000 clocks instead of ~5550; rows HEAD /
# rf: h128 uniform, ragged, b128 h128, varlen -5 to -10% if that chain bounds the pair; b32,
# b1 -3 to -6%; flat if the tensor pipe bounds it.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=200 checked_patch /tmp/rf next_seesaw_release_b_first.patch rf seesaw dense
for t in . /tmp/rf; do
  for c in ds_h128_sq1_uniform b128_h128_s8192; do
    echo "== pair 3 $t $c" >> "$L"
    (cd $t && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --pair 3 --cases $c >> "$L" 2>&1)
  done
done
say "pair probes"
C="ds_h128_sq1_uniform ds_h128_sq1_ragged b128_h128_s8192 b128_sq2_h128_varlen_causal b32_h128_s4096 b1_h128_s65536" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/rf
cat "$L"
