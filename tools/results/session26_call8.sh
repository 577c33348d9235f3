#!/usr/bin/env bash
# Session 26, call 8 (last device minutes).  Device, repository root:  OUT=$OUT bash tools/results/session26_call8.sh
# bs = next_narrow_raw_broadcast_slots.patch: fp8 layouts' math warpgroup takes a tile's
# first slot once (warp_uniform) and its chunks' slots by wrapping, as two math warpgroups
# do, instead of a division by SLOTS a chunk: SASS 5251 -> 5005 instructions, S^T's issue
# 341 -> 225 and O^T's 214 -> 139 lines a tile.  Call 5: the math is issue-bound.
# Predicted: fp8 h16 328 -> 318-326, fp8_ds_mla 300 -> 291-298.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/bs next_narrow_raw_broadcast_slots.patch
(cd /tmp/bs && PYTHONPATH=. timeout 60 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm: $(head -1 /tmp/warm.txt)"
check_tree /tmp/bs bs narrow
(cd /tmp/bs && GPU_FILE_TIMEOUT=40 gpu_files bs fp8)
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192"
BENCH_TIMEOUT=50 compare_rounds bs /tmp/bs
cat "$L"
