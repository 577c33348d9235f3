#!/usr/bin/env bash
# Session 23, call 5.  Device, repository root, .whl carried:
#   COMMIT=<HEAD> OUT=$OUT bash tools/results/session23_call5.sh
# The persistent pair beside FlashMLA (issue 9's sparse rows), then the dense GPU file on the
# Hopper family (the ABI's segment_batch became host_batch) and the forced-portable GPU files.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
(bash tools/gpu_bench.sh sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 \
  sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128 --repeats 30 > /dev/null 2>&1); say "peer bench $?"
cut -c1-230 $OUT/bench.log | grep -v "^# wrote" >> "$L"
PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py \
  > /tmp/t_dense.log 2>&1; say "HEAD dense: $(tail -1 /tmp/t_dense.log)"
PORTABLE_TIMEOUT=250 portable dense sparse fp8 hardening; say portable
cat "$L"
