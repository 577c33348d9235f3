#!/usr/bin/env bash
# Session 40, call 1 (prepared in session 39 after its device budget; CPU-checked, not run):
#   OUT=$OUT bash tools/results/next_session40_call1.sh
# The seesaw's `_segments` twin as it now stands has not run on a GPU: since session 39's
# calls 3-5 it gained warpgroup 1's wait for a phantom tile (a race the protocol model
# found), one thread's walk handing segment records to the loaders through shared memory
# (the loaders' 40 registers: no spills under NVRTC 12.9 or 13), and lost the
# segment-start L2 prefetch (flat).  It is opt-in (MLA_CUPY_SPLIT=segments) until this runs.
# 1. HEAD: the dense GPU file (test_multicast_twin_segment_mode forces the twin), memcheck
#    (its twin case at P=None runs under MLA_CUPY_SPLIT=segments).
# 2. /tmp/auto (next_seesaw_segments_auto.patch: the twin under `auto` for h128 s_q 1 batches
#    of two or more): the routing tests, then the h128 rows beside HEAD (balanced splits).
# 3. tools/phase_probe.py --boundary: the twin's segment boundaries taken apart.
# Predictions: dense file passes; memcheck 0 errors; rows as session 39's call 5 (twin
# against balanced splits): DeepSeek h128 ragged -1.7%, uniform flat, b128 h128 +0.8%,
# b32 h128 -2%.  If so, land the patch (and its docs: spec section 7, README, the header).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=240 gpu_files head dense
memcheck_sparse seg
grep -E "FAIL|case 17" /tmp/memcheck_seg.log | head -8 | cut -c1-200 >> "$L"
patched /tmp/auto next_seesaw_segments_auto.patch
(cd /tmp/auto && PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
  tests/test_gpu_dense.py -k "balanced_splits or schedule_reused or multicast_twin" > $OUT/gpu_auto.log 2>&1)
say "auto routing tests exit $?: $(tail -1 $OUT/gpu_auto.log)"
grep -E "^E " $OUT/gpu_auto.log | head -10 | cut -c1-300 >> "$L"
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096" BENCH_TIMEOUT=100 bench_trees . /tmp/auto
# 3. where a boundary's ~10 us go (tools/phase_probe.py --boundary, CPU-tested): each step
#    after the last segment's pairs.  Prediction: kept releases ~2-3 us (the epilogue), the
#    loader's first tile ~0.5 us later, the first S ~2 us after that (TMA from L2/DRAM, S),
#    the rest (to ~10 us) in the pipeline's refill and the combine's extra partials.
echo "== boundary probe" >> "$L"
PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --boundary >> "$L" 2>&1
say "boundary probe exit $?"
cat "$L"
