#!/usr/bin/env bash
# Prepared in session 24 (not run).  Device, repository root, right after call 1 (warm caches):
#   OUT=$OUT bash tools/results/next_session25_call2.sh
# sg v2 beside HEAD on the seesaw rows, two rounds (predicted: DeepSeek h128 ragged 282 ->
# 250-265 if the L2 prefetch takes a boundary from ~12 to ~5 us; b1 back to within 2 us of
# HEAD; b128 -1 to -2%), then qp (next_pair_q_prefetch.patch, rebased in session 24: the
# pair's producer prefetches the next job's Q into L2; predicted sparse s_q2 -1 to -2 us),
# then rs (next_raw_scores.patch: under a positive scale a whole tile's S stays unscaled until
# the exponent's FFMA, in the seesaw and in the pair's warpgroup 0: 32 FMULs fewer a tile on
# the way to the max / P hand-overs; CPU: no spills, no serialisation; predicted seesaw rows
# -0.5 to -1.5%, the pair -0.5 to -1%, as session 24's two hand-over cuts gave more than
# their instruction counts).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
[ -d /tmp/sg ] || patched /tmp/sg next_seesaw_segments_continuous.patch
patched /tmp/qp next_pair_q_prefetch.patch
patched /tmp/rs next_raw_scores.patch
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair mla_decode_fp8_ds_mla_causal_sparse_fold0_hopper_pair"
warm_kernels /tmp/qp; say "warm qp"
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096 b1_h128_s65536 b128_sq2_h128_varlen_causal"
BENCH_TIMEOUT=120 compare_rounds sg /tmp/sg
if check_tree /tmp/qp qp pair; then
  (cd /tmp/qp && gpu_files qp sparse && memcheck_sparse qp)
  C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128"; compare_rounds qp /tmp/qp
fi
(cd /tmp/rs && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /dev/null 2>&1); say "warm rs"
if check_tree /tmp/rs rs seesaw && check_tree /tmp/rs rs_pair pair; then
  C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096 sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128"
  compare_rounds rs /tmp/rs
fi
cat "$L"
