#!/usr/bin/env bash
# Session 19, call 3 (device, repository root, .whl carried):
#   OUT=$OUT COMMIT=<hash> bash tools/results/session19_call3.sh
# 1. the peer run for the README (FlashMLA and FlashInfer on the same inputs), the dense
#    rows, ds h16 and h64 among them (their peer numbers were session 15's).  The narrow
#    rows should be back at 8541a25's (b8 h16 ~42.5, ds h16 uniform ~166.4).
# 2. next_seesaw_p_shared.patch again, now on PageDiv (call 1: neutral on 8541a25, its
#    stalls maybe hidden behind warp 0's divisions).  Prediction: -1 to -3% on the h128 rows.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched, compare_rounds
patched /tmp/ss next_seesaw_p_shared.patch
(cd /tmp/ss && PYTHONPATH=. timeout 200 python3 -c \
  "from mla_cupy.compiler import get_kernel; get_kernel('mla_decode_bf16_causal_dense_fold0_hopper_seesaw')" \
  > /dev/null 2>&1 || echo "warm ss failed" >> "$L") &
timeout 400 bash tools/gpu_bench.sh b128_h16_s8192 b8_h16_s8192 b128_h128_s8192 b32_h128_s4096 \
  b128_sq2_h128_varlen_causal b1_h128_s65536 ds_h16_sq1_ragged ds_h16_sq1_uniform ds_h32_sq1_ragged \
  ds_h32_sq1_uniform ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h128_sq1_ragged ds_h128_sq1_uniform \
  --repeats 20 > /tmp/gpu_bench.txt 2>&1
say "peer bench exit $?"
wait
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096"
ROUNDS=2 BENCH_TIMEOUT=100 compare_rounds ss /tmp/ss
cat "$L"; cut -c1-220 $OUT/bench.log
