#!/usr/bin/env bash
# Session 23, call 4.  Device, repository root:  OUT=$OUT bash tools/results/session23_call4.sh
# HEAD = the persistent pair (8d1dce0): its GPU files and memcheck (each memcheck case also on
#   a two-SM grid: several jobs a CTA).
# fl = next_pair_flat.patch: the producer walks the CTA's tiles as one stream across its jobs
#   (lookups two tiles ahead across a job's end) and prefetches the next job's Q into L2.
#   Call 3: persistence saved 4 of a second wave's 12 us.  Prediction: b128 s_q1 178 ->
#   174-175 us; s_q2 341 -> 330-334; b2 unchanged.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/fl next_pair_flat.patch
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair mla_decode_fp8_ds_mla_causal_sparse_fold0_hopper_pair"
warm_kernels /tmp/fl; say "warm fl pair"
for f in sparse fp8 hardening; do
  PYTHONPATH=.:tests timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$f.py > /tmp/t_$f.log 2>&1
  echo "[$f exit $?]" >> /tmp/t_$f.log; say "HEAD $f: $(tail -2 /tmp/t_$f.log | tr '\n' ' ')"
done
PYTHONPATH=. timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py \
  > /tmp/memcheck.log 2>&1; say "HEAD memcheck exit $?: $(grep -h 'ERROR SUMMARY\|cases done' /tmp/memcheck.log | tr '\n' ' ')"
grep -h "sms=2" /tmp/memcheck.log | head -3 >> "$L"
if check_tree /tmp/fl fl pair; then
  (cd /tmp/fl && PYTHONPATH=.:tests timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
    tests/test_gpu_sparse.py > /tmp/t_fl.log 2>&1); say "fl sparse: $(tail -1 /tmp/t_fl.log)"
  (cd /tmp/fl && PYTHONPATH=. timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 python3 \
    tools/memcheck_sparse.py > /tmp/memcheck_fl.log 2>&1); say "fl memcheck exit $?: $(grep -h 'ERROR SUMMARY\|cases done' /tmp/memcheck_fl.log | tr '\n' ' ')"
  C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128"
  compare_rounds fl /tmp/fl
fi
cat "$L"
