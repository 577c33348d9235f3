#!/usr/bin/env bash
# Session 21, call 2 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session21_call2.sh
# 1. The peer run at d0ffd8c (the ring's producer loads dense tiles too): the README's dense
#    rows and issue 9's three sparse rows, FlashMLA and FlashInfer beside us.
#    Prediction: the ring rows (h16/h32/h64 DeepSeek, b128 h16, b8 h16) 1.5-2.5% faster than
#    at a89adf4, the seesaw and sparse rows unchanged within noise.
# 2. The sanitizer's quick sweep: the ring's dense producer path under memcheck / initcheck
#    (new since the last sweep), racecheck's known named-barrier artefact aside.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say
(PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm: $(head -1 /tmp/warm.txt)"
COMMIT=d0ffd8c timeout 300 bash tools/gpu_bench.sh b128_h16_s8192 b8_h16_s8192 b128_h128_s8192 b32_h128_s4096 \
  b128_sq2_h128_varlen_causal b1_h128_s65536 ds_h16_sq1_ragged ds_h16_sq1_uniform ds_h32_sq1_ragged \
  ds_h32_sq1_uniform ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h128_sq1_ragged ds_h128_sq1_uniform \
  sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b2_sq2_h128 \
  --repeats 20 > /tmp/gpu_bench.txt 2>&1
say "peer bench exit $?"
timeout 200 bash tools/sanitize_all.sh --quick --log-dir /tmp/sanitize > $OUT/sanitize.log 2>&1
say "sanitize exit $?: $(grep -h 'variants' $OUT/sanitize.log | tr '\n' ' ')"
cat "$L"; cut -c1-200 $OUT/bench.log
