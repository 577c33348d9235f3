#!/usr/bin/env bash
# Prepared in session 17 (CPU-checked; not run).  OUT=$OUT bash tools/results/next_session18_call1.sh
# next_seesaw_l2_prefetch.patch: warp 0 of the warpgroup computing a tile's S issues
# cp.async.bulk.prefetch.L2 for the tile's boxes (one per box, kv_box_rows x ROW_BYTES
# contiguous bytes of one page) a pair before the tile's TMA refill, so the refill reads L2,
# not DRAM.  Session 17's hotspots (b128 h128): 25% of our seesaw's stall samples and 35% of
# FlashMLA's wait on the refills' mbarriers, the same absolute time in both; the seesaw moves
# 2.3 TB/s (not bandwidth-bound), so the wait is latency.  SASS (nvcc 13 -ftz): 8 UBLKPF.L2,
# 251 registers (240 before), no spills.  Prediction: b128 h128 533 -> 490-510 us, ds h128
# uniform / ragged and b32 h128 -3 to -8%, varlen alike; ds h64 (the ring) unchanged.
# Then the patched kernel's hotspots: the mbarrier-poll share (call 1: 25%) should fall.
# Last, session 17's seg_info alignment fix (f089246) on the GPU: hopper_check at the seed
# that crashed (case 20, misaligned address) and the balanced-splits test (its one-head,
# page-3 batch is new).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched, compare_rounds
patched /tmp/pf next_seesaw_l2_prefetch.patch
(cd /tmp/pf && PYTHONPATH=. timeout 100 python3 tools/hopper_check.py --schedule seesaw > $OUT/check_pf.txt 2>&1); say "check pf exit $? $(tail -1 $OUT/check_pf.txt)"
C="b128_h128_s8192 ds_h128_sq1_uniform ds_h128_sq1_ragged b32_h128_s4096 b128_sq2_h128_varlen_causal ds_h64_sq1_uniform"
BENCH_TIMEOUT=70 compare_rounds "L2 prefetch" /tmp/pf
(cd /tmp/pf && PYTHONPATH=. timeout 100 python3 tools/ncu_hotspots.py b128_h128_s8192 hopper_seesaw --top 30 --out /tmp/hs_pf \
  > $OUT/hotspots_pf.txt 2>&1); say "hotspots exit $?"
MLA_CUPY_SEED=2206398199 PYTHONPATH=. timeout 100 python3 tools/hopper_check.py --schedule seesaw > $OUT/check_seed.txt 2>&1
say "hopper_check seesaw seed 2206398199 exit $? $(tail -1 $OUT/check_seed.txt)"
PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py -k balanced \
  > $OUT/tests.txt 2>&1; say "balanced test exit $? $(tail -1 $OUT/tests.txt)"
cat "$L"; head -4 $OUT/hotspots_pf.txt
