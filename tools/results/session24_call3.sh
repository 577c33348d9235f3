#!/usr/bin/env bash
# Session 24, call 3.  Device, repository root (right after call 2, warm cache):
#   OUT=$OUT bash tools/results/session24_call3.sh
# pa = next_seesaw_p0_as_is.patch: warpgroup 0 stores P(a) itself as P(a)' where b moved
#   neither of its rows' max (nearly every pair with the max slack): 48 instructions fewer
#   before warpgroup 1's P0 hand-over.  Prediction: seesaw rows -0.3 to -1%.
# qp = next_pair_q_prefetch.patch (rebased on the slack): the pair's producer prefetches the
#   next job's Q rows into L2 at the job's start.  Prediction: sparse b128 s_q1 -0.5 us,
#   s_q2 -1 to -2 us (three boundaries), if Q is what warpgroup 0 waits for at a boundary.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/pa next_seesaw_p0_as_is.patch
patched /tmp/qp next_pair_q_prefetch.patch
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
K="mla_decode_bf16_null_dense_fold0_hopper_seesaw mla_decode_bf16_causal_dense_fold0_hopper_seesaw mla_decode_fp16_causal_dense_fold0_hopper_seesaw mla_decode_bf16_sliding_window_causal_dense_fold0_hopper_seesaw mla_decode_bf16_null_dense_fold0_qk512_hopper_seesaw"
warm_kernels /tmp/pa; say "warm pa"
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair mla_decode_fp8_ds_mla_causal_sparse_fold0_hopper_pair"
warm_kernels /tmp/qp; say "warm qp"
if check_tree /tmp/pa pa seesaw; then
  C="b128_h128_s8192 ds_h128_sq1_uniform ds_h128_sq1_ragged b32_h128_s4096"; compare_rounds pa /tmp/pa
fi
if check_tree /tmp/qp qp pair; then
  C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128"; compare_rounds qp /tmp/qp
fi
cat "$L"
