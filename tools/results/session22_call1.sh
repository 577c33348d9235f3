#!/usr/bin/env bash
# Prepared in session 21 (CPU-checked; not run).  Device, repository root:
#   OUT=$OUT bash tools/results/session22_call1.sh
# lf = next_pair_local_first.patch on the pair schedule (forced only, MLA_CUPY_HOPPER_SCHEDULE=pair):
#   the producer converts and stores its share in its own buffer, fences and publishes, and
#   only then sends it to the peer by st.async (the latent read back from its own buffer, the
#   rope from registers); before, local and remote stores interleaved and the proxy fence
#   waited for the st.async round trips (session 11's finding).  num_tiles read in each
#   register region.  No spills (NVRTC and nvcc).  A first form that read the rope back too
#   failed hopper_check on the H200 (2 of 12: warpgroup 0 writes P(j) over the rope chunk once
#   S(j) is done, which can precede the read-back).
# Prediction: if the fence's wait on DSMEM is in the pair's 183.6 us skeleton (session 21 call
#   5: no MMAs, no loads, no conversion), b128 h128 228.5 -> 205-215 us; if not, within 2%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched, compare_rounds
patched /tmp/lf next_pair_local_first.patch
(cd /tmp/lf && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm lf: $(head -1 /tmp/warm.txt)"
(cd /tmp/lf && PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule pair > $OUT/check_lf.txt 2>&1)
rc=$?; say "check lf exit $rc: $(grep -h 'correctness' $OUT/check_lf.txt)"
if [ $rc -ne 0 ]; then cat "$L"; grep FAIL $OUT/check_lf.txt | cut -c1-300; exit 1; fi
(cd /tmp/lf && PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
   tests/test_gpu_sparse.py > /tmp/t_sparse.log 2>&1; echo "[sparse exit $?]" >> /tmp/t_sparse.log)
say "lf sparse: $(tail -2 /tmp/t_sparse.log | tr '\n' ' ')"
export MLA_CUPY_HOPPER_SCHEDULE=pair
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128"
ROUNDS=2 BENCH_TIMEOUT=100 compare_rounds lf /tmp/lf
unset MLA_CUPY_HOPPER_SCHEDULE
echo "== the ring (auto)" >> "$L"; PYTHONPATH=. BENCH_TIMEOUT=100 bench; say bench
# Where the pair's skeleton (no MMAs, loads or conversion: 183.6 us in session 21) waits:
# ncu on the kernel as producer_ceiling ablates it, HEAD's and lf's.
export PYTHONPATH=.:tests
MLA_CUPY_HOPPER_SCHEDULE=pair timeout 120 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 hopper_pair \
  --ablate strip+noload+noconvert --top 60 --out /tmp/hs/skel > $OUT/hotspots_skeleton.txt 2>&1; say "skeleton HEAD $?"
(cd /tmp/lf && MLA_CUPY_HOPPER_SCHEDULE=pair timeout 120 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 \
  hopper_pair --ablate strip+noload+noconvert --top 60 --out /tmp/hs/skel_lf > $OUT/hotspots_skeleton_lf.txt 2>&1)
say "skeleton lf $?"
cat "$L"
