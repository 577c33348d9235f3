#!/usr/bin/env bash
# Session 38, call 5 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session38_call5.sh
# What the twin's h128 rows below the peers are made of (landed tree, 718e829's kernels):
# 1. phase_probe.py (phases) on DeepSeek h128 ragged and uniform and varlen: kernel span, CTA
#    end spread, the later wave's starts, tiles a CTA.  Prediction: ragged 256 CTAs, ~120
#    of them in a second wave, end times spread >= 20 us; uniform one wave of 128, spread
#    < 5 us.
# 2. ncu_compare.py DeepSeek h128 ragged beside FlashMLA (ncu --set full): where our 269 us
#    against its 245 goes.  Prediction: its tensor pipe busier by ~8-10% of peak, DRAM
#    throughput within 5%, more of our stalls on barriers (mbarrier waits).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
(PYTHONPATH=.:tests timeout 150 python3 tools/phase_probe.py --cases ds_h128_sq1_ragged ds_h128_sq1_uniform \
  b128_sq2_h128_varlen_causal >> "$L" 2>&1)
say "phases $?"
. tools/peer_env.sh
timeout 240 python3 tools/ncu_compare.py ds_h128_sq1_ragged --peer flashmla --out /tmp/nc \
  > $OUT/compare_h128_ragged.txt 2>&1; say "compare $?"
cp /tmp/nc/*.csv.gz $OUT/ 2>/dev/null
cat "$L"; head -120 $OUT/compare_h128_ragged.txt
