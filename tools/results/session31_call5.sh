#!/usr/bin/env bash
# Session 31, call 5 (device, repository root):  OUT=$OUT bash tools/results/session31_call5.sh
# next_narrow_first_meta.patch: the narrow kernel's schedule record carries its share's
# first sequence's metadata (tok0, seq_len, cache_len) beside the walk, so a reading
# CTA's roles find their first segment without the lengths' DRAM round; and
# sequence_shares' general form (the first chunk found from the first pass for every
# batch, the second pass from chunk 1: session 30's deferred review item).
# 1. Checks on the patched tree: hopper_check narrow, the dense file (the schedule test,
#    segment mode over 24-300 sequences), fp8, memcheck.  Prediction: all pass.
# 2. Two rounds HEAD / patched, ours with the step's schedule.  Prediction: -0.5 us a
#    row (one DRAM round off each CTA's start): b8 h16 ~39.1 -> ~38.6.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=160 checked_patch /tmp/fm next_narrow_first_meta.patch fm narrow dense fp8
C="b8_h16_s8192 ds_h16_sq1_ragged ds_h16_sq1_uniform ds_h32_sq1_uniform" BENCH_TIMEOUT=70 bench_trees . /tmp/fm
cat "$L"
