#!/usr/bin/env bash
# Session 33, call 2 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session33_call2.sh
# Why does the ring stream the DeepSeek h64 / h32 uniform rows at ~3.45 TB/s (176.8 / 171 us)
# where the narrow 16-row tile streams h16 at 3.73 and FlashInfer h64 at ~3.6 (167.6)?  Six
# README rows run the ring (h32 and h64, ragged and uniform; h16 s_q2).
# 1. producer_ceiling: the ring without its wgmma (the producer and hand-overs alone) on
#    DeepSeek h64 / h32 uniform, the narrow h16 row beside.  Prediction: the stripped ring
#    within 5% of the full one (tensor work is ~47% of a 32-key tile's DRAM time), i.e. the
#    producer / hand-over path bounds it, not the math.
# 2. ncu_compare on DeepSeek h64 uniform beside FlashInfer (ncu --set full): DRAM
#    throughput, issue activity, stall reasons.  Prediction: FlashInfer's DRAM throughput
#    ~5% higher, ours with more long-scoreboard / barrier stalls a warp.
# 3. ncu_hotspots of the ring on the same case: where its warps wait.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
. tools/peer_env.sh
timeout 150 python3 tools/producer_ceiling.py ds_h64_sq1_uniform ds_h32_sq1_uniform ds_h16_sq1_uniform \
  >> "$L" 2>&1; say "ceiling $?"
timeout 200 python3 tools/ncu_compare.py ds_h64_sq1_uniform --peer flashinfer --out /tmp/nc \
  > $OUT/compare_h64.txt 2>&1; say "compare $?"
cp /tmp/nc/*.csv.gz $OUT/ 2>/dev/null
timeout 120 python3 tools/ncu_hotspots.py ds_h64_sq1_uniform 'decode.*fold0_hopper$' --top 50 --out /tmp/hs \
  > $OUT/hotspots_ring_h64.txt 2>&1; say "hotspots $?"
cat "$L"; head -80 $OUT/compare_h64.txt
