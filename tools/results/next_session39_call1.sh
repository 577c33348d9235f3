#!/usr/bin/env bash
# Session 39, call 1 (prepared in session 38 after its device budget; CPU-checked, not run):
#   OUT=$OUT bash tools/results/next_session39_call1.sh
# The persistent twin's first step (NOTES.md, session 38, "Next"): next_seesaw_stage_over_tiles.patch
# (/tmp/stg) stages the seesaw's epilogue over its two tile buffers instead of over Q and the
# first buffer, where they hold both warpgroups' fp32 slices (D_QK 576; D_QK 512 keeps Q and
# its SASS is byte-identical), so that a persistent kernel can load the next piece's Q under
# the epilogue, as FlashMLA stages its output over its K buffers.  CPU: no spills, 168
# registers, the 576 variants' instruction count unchanged.  Prediction: hopper_check seesaw
# 0 failures, the dense file passes, memcheck 0 errors; every seesaw row flat (+-0.5%): the
# staging's bank pattern and 16-byte rows are the same at the new base (1024-aligned).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
# session 38's last GPU tests (written after its device budget): graph replay with a shrunk
# batch and a step's DecodeSchedule on the `_multicast` twin, on HEAD first
PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "graph_replay or schedule_reused" > $OUT/gpu_head_twin_graph.log 2>&1
say "head graph/schedule tests exit $?: $(tail -1 $OUT/gpu_head_twin_graph.log)"
GPU_FILE_TIMEOUT=220 checked_patch /tmp/stg next_seesaw_stage_over_tiles.patch stg seesaw dense
C="ds_h128_sq1_uniform ds_h128_sq1_ragged b128_h128_s8192 b128_sq2_h128_varlen_causal b32_h128_s4096 b1_h128_s65536" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/stg
cat "$L"
