#!/usr/bin/env bash
# Session 35, call 2 (prepared in session 34, not run; device, repository root):
#   OUT=$OUT bash tools/results/next_session35_call2.sh
# next_seesaw_segments_run_on.patch: segment mode for the seesaw (no window, D_qk 576,
# batches of two or more): grid (row tiles, SMs / row tiles, 1), each row tile of a
# sequence running the same shares (FlashMLA's sm_parts per m-block); the loading
# warpgroup's tiles keep their index in the share across segments (buffer, mbarrier
# phase), so a segment's first tiles load under the last one's epilogue, which stages over
# Q alone (fp32 partials 32 rows a round); setmaxnreg 224 / 56 (the loader's walk spilled
# at 40).  CPU: every seesaw variant compiles without spills; the protocol model of the
# segments (1-4 segments of 1-6 tiles, two and four buffers) passes and catches an eager
# loader; the CPU suite passes with its routing tests updated; a GPU test
# (test_seesaw_segment_mode) and test_balanced_splits' new assertions come with it.
# (It conflicts textually with next_seesaw_32x4.patch, and needs SEG_UNIT = 2 tiles there.)
# Session 25's sg (a loader restarting at each segment) paid ~13 us a segment; the ring's
# run-on loader ~6.7.  Predictions:
# 1. checked_patch: hopper_check seesaw 0 failures, the dense file passes (new test
#    included), memcheck 0.
# 2. Two rounds, HEAD / patch: DeepSeek h128 ragged 276 -> ~262 (-5%), varlen 939 ->
#    ~915, h128 uniform, b32 h128, b128 h128 within 2% (aligned cuts as the splits), b1
#    unchanged (one sequence keeps the splits).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=240 checked_patch /tmp/sgr next_seesaw_segments_run_on.patch sgr seesaw dense
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_sq2_h128_varlen_causal b32_h128_s4096 b128_h128_s8192 b1_h128_s65536"
BENCH_TIMEOUT=150 bench_trees . /tmp/sgr
cat "$L"
