#!/usr/bin/env bash
# Session 23, call 3.  Device, repository root:  OUT=$OUT bash tools/results/session23_call3.sh
# ps = next_pair_persistent.patch: the pair's CTAs run jobs (virtual grid z = blockIdx.z,
#   + gridDim.z, ..) from a table in shared memory, the producer gathering the next job's
#   tiles while the math warpgroups finish the last one's; grid z = schedule.pair_grid_z
#   (enough clusters to fill the SMs once).  Call 2: a second wave of CTAs costs 12 us over
#   32 more tiles in the same CTA.  Prediction: b128 s_q1 181 -> 170-175 us; s_q2 351 ->
#   320-330; b64 s_q2 as s_q1; b2 s_q2 unchanged (not persistent).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/ps next_pair_persistent.patch
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair mla_decode_fp8_ds_mla_causal_sparse_fold0_hopper_pair"
warm_kernels . ; say "warm HEAD pair"
(cd /tmp/ps && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm ps: $(head -1 /tmp/warm.txt)"
check_tree /tmp/ps ps pair || { cat "$L"; exit 1; }
(cd /tmp/ps && PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
  tests/test_gpu_sparse.py -k pair > /tmp/t_pair.log 2>&1); say "ps sparse -k pair: $(tail -1 /tmp/t_pair.log)"
grep -h "Error\|assert" /tmp/t_pair.log | head -5 >> "$L"
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128"
compare_rounds ps /tmp/ps
cat "$L"
