#!/usr/bin/env bash
# Session 23, call 6.  Device, repository root, .whl carried:
#   COMMIT=<HEAD> OUT=$OUT bash tools/results/session23_call6.sh
# The split model with the pair's tile (64 slots, 1.8 units): b2 s_q2 h128 now chooses P=11
# (was 13; call 1-2 sweeps: 11 28.0-28.3, 13 28.7-28.8, 8 26.9 us), b1 s_q1 16 (was 22).
# Prediction: b2 s_q2 28.8 -> ~28.1 us.  The sparse GPU file, then b2 beside FlashMLA.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
PYTHONPATH=.:tests timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_sparse.py \
  > /tmp/t_sparse.log 2>&1; say "sparse: $(tail -1 /tmp/t_sparse.log)"
S=sparse_ds_mla
PYTHONPATH=.:tests timeout 100 python3 tools/split_sweep.py ${S}_b2_sq2_h128:8,11,13 ${S}_b1_sq1_h128:16,22,32 \
  ${S}_b2_sq1_h128:11,16 >> "$L" 2>&1; say "sweep $?"
(bash tools/gpu_bench.sh sparse_ds_mla_b2_sq2_h128 --repeats 30 > /dev/null 2>&1); say "peer bench $?"
cut -c1-230 $OUT/bench.log | grep -v "^# wrote" >> "$L"
cat "$L"
