#!/usr/bin/env bash
# Session 21, call 6 (device, repository root):  OUT=$OUT bash tools/results/session21_call6.sh
# The pair's producer: its share converted and stored locally, fenced and published, and
# only then read back and sent to the peer by st.async (before: local and remote stores interleaved, then
# the proxy fence, which waits for the st.async round trips: session 11's finding).
# Call 5: the pair with neither MMAs nor loads nor conversions still took 183.6 us (2.9 us a
# 64-slot tile of hand-overs and stores).  Prediction: if the fence's wait on DSMEM is in that
# skeleton, the pair 228.5 -> 205-215 us; if not, within 2%.
# (Second run: the first read the rope back after the publish, over which warpgroup 0 had
# written P(j): hopper_check failed 2 cases; the rope now goes from registers.)
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
(PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm: $(head -1 /tmp/warm.txt)"
PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule pair > $OUT/check_pair.txt 2>&1
rc=$?; say "check pair exit $rc: $(grep -h 'correctness' $OUT/check_pair.txt)"
if [ $rc -ne 0 ]; then cat "$L"; tail -30 $OUT/check_pair.txt; exit 1; fi
(PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
   tests/test_gpu_sparse.py -k "pair or matches" > /tmp/t_sparse.log 2>&1; echo "[sparse exit $?]" >> /tmp/t_sparse.log)
say "sparse: $(tail -2 /tmp/t_sparse.log | tr '\n' ' ')"
export PYTHONPATH=.:tests
C="sparse_ds_mla_b128_sq1_h128"
for r in 1 2; do
  echo "== ring ($r)" >> "$L"; BENCH_TIMEOUT=100 bench; say bench
  echo "== pair, forced ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=pair BENCH_TIMEOUT=100 bench; say bench
done
cat "$L"
