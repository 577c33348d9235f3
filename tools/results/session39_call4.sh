#!/usr/bin/env bash
# Session 39, call 4: the `_segments` twin's boundary, two changes (the next segment found at
# a segment's top, off the epilogue's path; its first tiles prefetched into L2 before their
# buffers free), against the twin before them (/tmp/before: the step reverted) and split
# mode (MLA_CUPY_SPLIT=partitions), and the equal cut's start weight 6 (/tmp/start6).
# OUT=$OUT bash tools/results/session39_call4.sh
# Predictions: tests pass.  Call 3 (twin before): DeepSeek h128 ragged 274.1/274.8 us (split
# mode with balanced splits, HEAD before the twin: 274.5), uniform 234.4/235.0 (partitions
# 230.9/229.8), b128 h128 456.0/456.3 (451.5/449.7), b32 80.4/80.7 (78.7/78.0).  With the
# two changes: -1 to -2 us a boundary (the first tiles' DRAM latency, the walk's loads), so
# the ragged row (about three segments a share) -1 to -2%, the even rows -0.5%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
rm -rf /tmp/before && cp -r . /tmp/before && (cd /tmp/before && git apply -R tools/results/2026-12-04j_segments_boundary_step.patch) || say "revert failed"
patched /tmp/start6 next_seesaw_segments_start6.patch
patched /tmp/nosegs next_seesaw_segments_opt_in.patch
K="mla_decode_bf16_causal_dense_fold0_hopper_seesaw_multicast_segments mla_decode_bf16_null_dense_fold0_hopper_seesaw_multicast_segments" \
  warm_kernels /tmp/before /tmp/start6
PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py \
  -k "multicast_twin_segment_mode or schedule_reused or graph_replay" > $OUT/gpu_segments.log 2>&1
say "segments tests exit $?: $(tail -1 $OUT/gpu_segments.log)"
grep -E "^E " $OUT/gpu_segments.log | head -10 | cut -c1-300 >> "$L"
memcheck_sparse seg
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096"
for r in 1 2; do
  echo "== auto ($r)" >> "$L"; PYTHONPATH=. BENCH_TIMEOUT=100 bench
  echo "== before ($r)" >> "$L"; (cd /tmp/before && PYTHONPATH=. BENCH_TIMEOUT=100 bench)
  echo "== start6 ($r)" >> "$L"; (cd /tmp/start6 && PYTHONPATH=. BENCH_TIMEOUT=100 bench)
  echo "== nosegs ($r)" >> "$L"; (cd /tmp/nosegs && PYTHONPATH=. BENCH_TIMEOUT=100 bench)
  say "round $r"
done
cat "$L"
