#!/usr/bin/env bash
# Session 21, call 4 (device, repository root):  OUT=$OUT bash tools/results/session21_call4.sh
# The pair with its producer a tile ahead (call 3's pair measured 228.7 us against the ring's
# 219.5 at b128 h128: ~3.6 us a 64-slot tile, against ~1.6 us of MMAs and softmax: the
# producer's load latency lay bare, its loads issued after the previous tile's stores).
# Now tile t + 1's loads go out before tile t's stores (ptxas puts them after the first six).
# Prediction: b128 s_q1 h128 228.7 -> 190-205 us (the latency under the stores and the wait),
# s_q2 443.6 -> ~390.  Then the pair's ncu stall samples (where its warpgroups wait).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
(PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm: $(head -1 /tmp/warm.txt)"
PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule pair > $OUT/check_pair.txt 2>&1
rc=$?; say "check pair exit $rc: $(grep -h 'correctness' $OUT/check_pair.txt)"
if [ $rc -ne 0 ]; then cat "$L"; tail -30 $OUT/check_pair.txt; exit 1; fi
(PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
   tests/test_gpu_sparse.py > /tmp/t_sparse.log 2>&1; echo "[sparse exit $?]" >> /tmp/t_sparse.log)
say "sparse: $(tail -2 /tmp/t_sparse.log | tr '\n' ' ')"; cp /tmp/t_sparse.log $OUT/tests.log
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b2_sq2_h128"
export PYTHONPATH=.
for r in 1 2; do
  echo "== ring, forced ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=ring BENCH_TIMEOUT=100 bench; say bench
  echo "== pair, auto ($r)" >> "$L"; BENCH_TIMEOUT=100 bench; say bench
done
timeout 120 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 hopper_pair --top 60 --out /tmp/hs/pair \
  > $OUT/hotspots_pair.txt 2>&1; say "hotspots pair $?"
cat "$L"
