#!/usr/bin/env bash
# Session 38, call 3:  OUT=$OUT bash tools/results/session38_call3.sh
# Call 2 found the twin's L2 prefetch a pair ahead worth 4-10% (without it: DeepSeek h128
# uniform 233.6 -> 245.2 us, ragged 271.9 -> 291.3, b128 h128 448.9 -> 464.7, b32 79.6 ->
# 87.1): the cluster's refills wait on DRAM.  next_seesaw_twin_l2_lead2.patch (/tmp/lead):
# the twin's prefetch two pairs ahead (the first iteration also fetches the pair between);
# the pages roll so a tile's page is still looked up once (no spills; the plain seesaw's SASS
# unchanged).  Prediction: h128 rows -1 to -3% if DRAM latency at one pair's lead is still
# exposed; flat or slower if the extra lead only evicts (session 20: a lead of two pairs was
# 3% slower than one on the plain seesaw, whose L2 served each box twice).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/lead next_seesaw_twin_l2_lead2.patch   # (now 2026-12-04i_dropped_seesaw_twin_l2_lead2.patch)
(cd /tmp/lead && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_lead.txt 2>&1)
say "warm lead: $(head -1 /tmp/warm_lead.txt)"
check_tree /tmp/lead lead seesaw
(cd /tmp/lead && PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k multicast > $OUT/gpu_lead_multicast.log 2>&1)
say "lead dense -k multicast exit $?: $(tail -1 $OUT/gpu_lead_multicast.log)"
echo "== pair 3 lead b128_h128_s8192" >> "$L"
(cd /tmp/lead && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --pair 3 --cases b128_h128_s8192 >> "$L" 2>&1)
C="ds_h128_sq1_uniform ds_h128_sq1_ragged b128_h128_s8192 b128_sq2_h128_varlen_causal b32_h128_s4096" \
  BENCH_TIMEOUT=150 ROUNDS=3 bench_trees . /tmp/lead
cat "$L"
