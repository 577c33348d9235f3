#!/usr/bin/env bash
# Session 20, call 4 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session20_call4.sh
# 1. The peer run at a89adf4 (the seesaw's loading warpgroup): the README's dense rows and
#    issue 9's three sparse rows, FlashMLA and FlashInfer beside us.
# 2. 64 rows a sequence (DeepSeek h64 s_q 1, h32 s_q 2, h16 s_q 4) run the ring; forced onto
#    the seesaw, whose short rows the loader made 7-11% faster (b32, b1).  Session 19 had
#    the seesaw 2-13% slower there (segment-mode trees).  Prediction: the seesaw within 3%
#    of the ring on uniform rows, ahead on ragged ones; if it wins all six, the row rule moves.
# 3. The sanitizer's quick sweep (the seesaw's new mbarrier protocol under memcheck,
#    racecheck, initcheck).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
COMMIT=a89adf4 timeout 300 bash tools/gpu_bench.sh b128_h16_s8192 b8_h16_s8192 b128_h128_s8192 b32_h128_s4096 \
  b128_sq2_h128_varlen_causal b1_h128_s65536 ds_h16_sq1_ragged ds_h16_sq1_uniform ds_h32_sq1_ragged \
  ds_h32_sq1_uniform ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h128_sq1_ragged ds_h128_sq1_uniform \
  sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b2_sq2_h128 \
  --repeats 20 > /tmp/gpu_bench.txt 2>&1
say "peer bench exit $?"
export PYTHONPATH=.
C="ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h32_sq2_ragged ds_h32_sq2_uniform ds_h16_sq4_ragged ds_h16_sq4_uniform"
for r in 1 2; do
  echo "== auto, the ring ($r)" >> "$L"; BENCH_TIMEOUT=120 bench; say bench
  echo "== forced seesaw ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=seesaw BENCH_TIMEOUT=120 bench; say bench
done
timeout 200 bash tools/sanitize_all.sh --quick --log-dir /tmp/sanitize > $OUT/sanitize.log 2>&1
say "sanitize exit $?: $(grep -h 'variants' $OUT/sanitize.log | tr '\n' ' ')"
cat "$L"; cut -c1-220 $OUT/bench.log
