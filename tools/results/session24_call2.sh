#!/usr/bin/env bash
# Session 24, call 2 (device, repository root, .whl carried):
#   COMMIT=<HEAD> OUT=$OUT bash tools/results/session24_call2.sh
# 1. The max slack landed: the GPU files on it (dense, sparse, fp8, hardening; the new
#    climbing-score tests among them).
# 2. The peer run (README tables): every dense row and issue 9's five sparse rows.
#    Prediction from call 1: seesaw rows 3-4% faster than at d0ffd8c (b128 h128 ~467 against
#    FlashMLA ~465: ~1.0; DeepSeek h128 ragged ~288: ~0.85, uniform ~244: ~0.93, b32 ~80: ~0.94);
#    sparse rows ~1.02-1.05 (four), b2 ~0.89; narrow and ring rows as at d0ffd8c.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
GPU_FILE_TIMEOUT=200 gpu_files HEAD dense sparse fp8 hardening
timeout 240 bash tools/gpu_bench.sh b128_h16_s8192 b8_h16_s8192 b128_h128_s8192 b32_h128_s4096 \
  b128_sq2_h128_varlen_causal b1_h128_s65536 ds_h16_sq1_ragged ds_h16_sq1_uniform ds_h32_sq1_ragged \
  ds_h32_sq1_uniform ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h128_sq1_ragged ds_h128_sq1_uniform \
  sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 \
  sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128 --repeats 20 > /dev/null 2>&1
say "peer bench exit $?"
for f in dense sparse fp8 hardening; do grep -h "FAIL\|Error" /tmp/t_$f.log | head -5 >> "$L"; done
cat "$L"; cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote"
