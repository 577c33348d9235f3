#!/usr/bin/env bash
# Session 39, call 3: the seesaw's `_segments` twin (persistent: a cluster a share of the
# batch's 64-key tiles), first run.  OUT=$OUT bash tools/results/session39_call3.sh
# Predictions: the new GPU test passes (both masks), the twin's graph/schedule tests
# pass, memcheck 0 errors.  Rows (auto = the twin in segment mode where the batch has
# two sequences or more; partitions = split mode, the `_multicast` twin): DeepSeek h128
# ragged 274 -> ~250 us (no second wave: 256 CTAs today, 122 in a second wave), uniform
# 236 -> ~232 (the aligned cut: two whole sequences a share on 62 of 66 clusters, as the
# two waves today), b128 h128 452 -> ~445, b32 h128 (P=2 today) ~flat; b1 (segments
# forced) slower than P=64 (15.5 tiles a share).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py \
  -k "multicast_twin_segment_mode or tile_pairs or graph_replay or schedule_reused" > $OUT/gpu_segments.log 2>&1
say "segments tests exit $?: $(tail -1 $OUT/gpu_segments.log)"
grep -E "^E |Error|FAILED" $OUT/gpu_segments.log | head -20 | cut -c1-300 >> "$L"
memcheck_sparse seg
grep -E "FAIL|case 17" /tmp/memcheck_seg.log | head -8 >> "$L"
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096"
for r in 1 2; do
  echo "== auto ($r)" >> "$L"; PYTHONPATH=. BENCH_TIMEOUT=100 bench
  echo "== partitions ($r)" >> "$L"; PYTHONPATH=. MLA_CUPY_SPLIT=partitions BENCH_TIMEOUT=100 bench
  say "round $r"
done
echo "== b1 segments / auto" >> "$L"
PYTHONPATH=. C="b1_h128_s65536" MLA_CUPY_SPLIT=segments BENCH_TIMEOUT=60 bench
PYTHONPATH=. C="b1_h128_s65536" BENCH_TIMEOUT=60 bench
say "done"
cat "$L"
