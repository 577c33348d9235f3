#!/usr/bin/env bash
# Session 39, call 6: the balanced-splits test (its 128-head batches now the `_segments`
# twin; call 5 stopped at its routing assert after the first batch matched) and the twin's
# tests on HEAD.  OUT=$OUT bash tools/results/session39_call6.sh
# Prediction: all pass.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
K="mla_decode_bf16_causal_dense_fold0_hopper_seesaw_multicast_segments mla_decode_bf16_null_dense_fold0_hopper_seesaw_multicast_segments mla_decode_fp16_causal_dense_fold0_hopper_seesaw_multicast_segments mla_decode_bf16_causal_dense_fold0_hopper_seesaw_multicast mla_decode_bf16_causal_dense_fold0_hopper_seesaw mla_decode_bf16_causal_dense_fold0_hopper mla_decode_bf16_causal_dense_fold0_qk512_hopper_seesaw mla_decode_fp16_causal_dense_fold0_qk512_hopper_seesaw mla_decode_fp16_causal_dense_fold0_qk512_hopper_seesaw_multicast mla_decode_bf16_causal_dense_fold0_m16_hopper_narrow mla_combine_bf16 mla_combine_bf16_warp_rows mla_combine_fp16 mla_combine_fp16_warp_rows" \
  warm_kernels .
say "warm"
PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py \
  -k "balanced_splits or multicast_twin_segment_mode" > $OUT/gpu_final.log 2>&1
say "tests exit $?: $(tail -1 $OUT/gpu_final.log)"
grep -E "^E " $OUT/gpu_final.log | head -10 | cut -c1-300 >> "$L"
cat "$L"
