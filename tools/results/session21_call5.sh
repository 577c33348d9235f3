#!/usr/bin/env bash
# Session 21, call 5 (device, repository root):  OUT=$OUT bash tools/results/session21_call5.sh
# The pair schedule (forced only now; v1 producer, 228.7 us against the ring's 219.5 at b128
# h128): where its time goes.  Call 4's hotspots (the tile-ahead producer) put warpgroup 1 at
# its P_READY barrier 74% of its samples, warpgroup 0 spread over its serial S -> softmax ->
# P V chain (short_sb 22%, barrier 20%, long_sb 15%), the producer waiting on its loads
# (long_sb 24%) and conversions (short_sb 31%).
# 1. hopper_check --schedule pair and the sparse GPU file (the forced pair test among it).
# 2. producer_ceiling on the pair: without wgmma (the producer and hand-overs alone), and
#    ablated (noconvert, noload, both); with wgmma and noload+noconvert (the math and the
#    cluster hand-overs alone).  The ring's full / without-wgmma times beside it.
#    Prediction: the pair's math alone ~150-170 us (FlashMLA's structure, serial warpgroup 0),
#    its producer alone ~110-130 us (half the ring's 180): so the math chain, not the
#    producer, holds the pair, and the next step is warpgroup 0's S(j + 1) under P V(j).
# 3. The pair's ncu stall samples (v1).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say
(PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm: $(head -1 /tmp/warm.txt)"
PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule pair > $OUT/check_pair.txt 2>&1
rc=$?; say "check pair exit $rc: $(grep -h 'correctness' $OUT/check_pair.txt)"
if [ $rc -ne 0 ]; then cat "$L"; tail -30 $OUT/check_pair.txt; exit 1; fi
(PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
   tests/test_gpu_sparse.py > /tmp/t_sparse.log 2>&1; echo "[sparse exit $?]" >> /tmp/t_sparse.log)
say "sparse: $(tail -2 /tmp/t_sparse.log | tr '\n' ' ')"
export PYTHONPATH=.:tests
C=sparse_ds_mla_b128_sq1_h128
MLA_CUPY_HOPPER_SCHEDULE=pair timeout 120 python3 tools/producer_ceiling.py $C \
  --ablate noconvert,noload,noload+noconvert >> "$L" 2>&1; say "ceiling pair $?"
MLA_CUPY_HOPPER_SCHEDULE=pair timeout 120 python3 tools/producer_ceiling.py $C --keep-mma \
  --ablate noconvert,noload,noload+noconvert >> "$L" 2>&1; say "ceiling pair keep-mma $?"
timeout 60 python3 tools/producer_ceiling.py $C >> "$L" 2>&1; say "ceiling ring $?"
MLA_CUPY_HOPPER_SCHEDULE=pair timeout 120 python3 tools/ncu_hotspots.py $C hopper_pair --top 60 --out /tmp/hs/pair \
  > $OUT/hotspots_pair.txt 2>&1; say "hotspots pair $?"
cat "$L"
