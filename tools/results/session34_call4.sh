#!/usr/bin/env bash
# Session 34, call 4 (device, repository root):  OUT=$OUT bash tools/results/session34_call4.sh
# 1. The ring forced at 128 rows (grid x = 2 row tiles, split mode) beside auto (the seesaw):
#    is the ring close enough at h128 that its segment mode, extended to several row tiles
#    a sequence, would beat the seesaw's balanced splits on ragged batches?  Prediction: the
#    ring 10-15% slower on uniform h128 rows (warpgroup 0 alone computes every S).
# 2. The ring's start weight: SEG_START_UNITS 4 and 5 beside 3 (call 3's probe: shares of two
#    segments end ~2.5 us after those of one, of three ~8 us).  Prediction: 4 takes 1-2 us off
#    the ragged ring rows, 5 overshoots.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
S="auto ring" schedule_sweep h128 ds_h128_sq1_uniform ds_h128_sq1_ragged b32_h128_s4096 b128_sq2_h128_varlen_causal
say "sweep done"
patched /tmp/s4 next_ring_start_units_4.patch
patched /tmp/s5 next_ring_start_units_5.patch
C="ds_h64_sq1_ragged ds_h32_sq1_ragged ds_h16_sq2_ragged ds_h16_sq1_ragged"
BENCH_TIMEOUT=150 bench_trees . /tmp/s4 /tmp/s5
(cd /tmp/s4 && PYTHONPATH=.:tests timeout 60 python3 tools/ring_probe.py ds_h64_sq1_ragged >> "$L" 2>&1)
cat "$L"
