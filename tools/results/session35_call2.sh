#!/usr/bin/env bash
# Session 35, call 2 (device, repository root):  OUT=$OUT bash tools/results/session35_call2.sh
# Call 1: the seesaw without its L2 prefetch, forced at DeepSeek h64, 178.1 / 178.4 us
# uniform against HEAD's 199.8 / 200.7 (and the ring's 183), but +4-5% on the h128 rows,
# where two row tiles read each tile.  So:
# - next_seesaw_l2_shared.patch (/tmp/l2): the prefetch only where group_tiles > 1 (split
#   mode).  Prediction: h64 forced ~178, h32 forced below the ring's ~173-175?, h128 rows,
#   b32, b128 h128, b1 unchanged (within 1%).
# - next_seesaw_segments_run_on_l2.patch (/tmp/sgl): session 34's seesaw segment mode
#   (prepared, never run) with the same rule (prefetch where gridDim.x > 1 in segment mode).
#   Prediction: h128 ragged 277 -> ~262, varlen 939 -> ~915, h128 uniform / b32 / b128 h128
#   within 2%, b1 unchanged; forced at h64, uniform ~175, ragged 207 -> ~190 (the ring 196).
# Checked first (hopper_check --schedule seesaw on both trees, and every bench case against
# the reference), then two rounds, then the dense test file and the memcheck on /tmp/sgl.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/l2 next_seesaw_l2_shared.patch
patched /tmp/sgl next_seesaw_segments_run_on_l2.patch
for d in /tmp/l2 /tmp/sgl; do
  (cd $d && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm_$(basename $d).txt 2>&1) &
done
wait
say "warm: $(head -1 /tmp/warm_l2.txt) / $(head -1 /tmp/warm_sgl.txt)"
check_tree /tmp/l2 l2 seesaw
check_tree /tmp/sgl sgl seesaw
for r in 1 2; do
  for t in . /tmp/l2 /tmp/sgl; do
    echo "== $t seesaw forced ($r)" >> "$L"
    (cd $t && C="ds_h64_sq1_uniform ds_h64_sq1_ragged ds_h32_sq1_uniform ds_h32_sq1_ragged" \
       MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=. bench)
    echo "== $t auto ($r)" >> "$L"
    (cd $t && C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_sq2_h128_varlen_causal b32_h128_s4096 b128_h128_s8192 b1_h128_s65536" \
       BENCH_TIMEOUT=120 PYTHONPATH=. bench)
  done
  say "round $r"
done
echo "== HEAD auto (the ring) at h32 / h64" >> "$L"
C="ds_h64_sq1_uniform ds_h64_sq1_ragged ds_h32_sq1_uniform ds_h32_sq1_ragged" PYTHONPATH=. bench
say "ring"
(cd /tmp/sgl && GPU_FILE_TIMEOUT=200 gpu_files sgl dense && memcheck_sparse sgl)
cat "$L"
