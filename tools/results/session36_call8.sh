#!/usr/bin/env bash
# Session 36, call 8 (device, repository root):
#   OUT=$OUT bash tools/results/session36_call8.sh
# Calls 6-7 (register-held stamps, first tile issued in the set-up): the loader's first page-id
# read took 0.7 us (b1), 1.6 (b32 h128), 2.6 (DeepSeek h128 uniform) after the L2 flush, and
# at HEAD it starts only after the set-up's barrier (~3.8 us), so tile 0's copies go out ~6.7.
# next_seesaw_lookup_l2_ahead.patch (/tmp/lk): HEAD's order kept (barrier, then the loader),
# but warps 0-1 of the loading warpgroup prefetch their first tiles' page ids into L2
# (prefetch.global.L2, CCTL.E.PF2 before the barrier) as soon as split_keys gives the range.
# Predictions: hopper_check seesaw 0 failures, dense file passes; start probe: tile 0's copies
# issued b32 ~6.7 -> ~5.0, DeepSeek h128 uniform ~7.3 -> ~5.3, b1 ~4.7 -> ~4.3; the pair loop
# entered ~1-1.5 us sooner at b32 / uniform; rows HEAD / lk: b32 h128 -1 to -1.5%, b1 -0.5%,
# h128 uniform / ragged -0.5%, varlen and b128 h128 within 0.3%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/lk next_seesaw_lookup_l2_ahead.patch
check_tree /tmp/lk lk seesaw
for t in . /tmp/lk; do
  echo "== start probe $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --start \
    --cases b1_h128_s65536 b32_h128_s4096 ds_h128_sq1_uniform >> "$L" 2>&1)
done
say "start probes"
C="b1_h128_s65536 b32_h128_s4096 ds_h128_sq1_uniform ds_h128_sq1_ragged b128_sq2_h128_varlen_causal b128_h128_s8192" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/lk
(cd /tmp/lk && GPU_FILE_TIMEOUT=200 gpu_files lk dense)
cat "$L"
