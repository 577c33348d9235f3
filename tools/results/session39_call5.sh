#!/usr/bin/env bash
# Session 39, call 5: the `_segments` twin as the default for h128 s_q 1 batches of two or
# more (start weight 6), checked by the whole dense GPU file and memcheck, then timed beside
# split mode with balanced splits (/tmp/nosegs: the twin opt-in) and start weight 10
# (/tmp/start10).  OUT=$OUT bash tools/results/session39_call5.sh
# Predictions: dense file passes; memcheck 0 errors.  Rows as call 4: HEAD (start 6) ragged
# ~264, nosegs ~268.5; uniform all ~231; b128 HEAD +0.6% over nosegs; b32 within 1%.
# start10: ragged within 1% of start 6 (the weight's optimum is broad).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/nosegs next_seesaw_segments_opt_in.patch
patched /tmp/start10 next_seesaw_segments_start10.patch
K="mla_decode_bf16_causal_dense_fold0_hopper_seesaw_multicast_segments mla_decode_bf16_null_dense_fold0_hopper_seesaw_multicast_segments" \
  warm_kernels /tmp/start10
GPU_FILE_TIMEOUT=240 gpu_files head dense
memcheck_sparse seg
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096"
BENCH_TIMEOUT=100 bench_trees . /tmp/nosegs /tmp/start10
cat "$L"
