#!/usr/bin/env bash
# Session 23, call 8.  Device, repository root:  OUT=$OUT bash tools/results/session23_call8.sh
# bl = next_pair_boundary_lookups.patch: the producer looks up the next job's first two tiles'
#   slot indices at the start of the last job's last tile (one warp-uniform branch a job), so
#   a job's first record loads no longer wait for an index round trip.  Prediction: b128 s_q1
#   178 -> 177-177.5 us (one boundary), s_q2 341 -> 338-339 (three), b64 s_q2 as s_q1.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/bl next_pair_boundary_lookups.patch
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair mla_decode_fp8_ds_mla_causal_sparse_fold0_hopper_pair"
warm_kernels /tmp/bl; say "warm bl pair"
check_tree /tmp/bl bl pair || { cat "$L"; exit 1; }
(cd /tmp/bl && PYTHONPATH=.:tests timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
  tests/test_gpu_sparse.py > /tmp/t_bl.log 2>&1); say "bl sparse: $(tail -1 /tmp/t_bl.log)"
(cd /tmp/bl && PYTHONPATH=. timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 python3 \
  tools/memcheck_sparse.py > /tmp/memcheck_bl.log 2>&1); say "bl memcheck exit $?: $(grep -h 'ERROR SUMMARY\|cases done' /tmp/memcheck_bl.log | tr '\n' ' ')"
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128"
compare_rounds bl /tmp/bl
cat "$L"
