#!/usr/bin/env bash
# Session 26, call 6 (on 9641288).  Device, repository root:  OUT=$OUT bash tools/results/session26_call6.sh
# tb = next_narrow_tile_barrier.patch: fp8 layouts' narrow kernel publishes a tile on one
# mbarrier (of four) and its math warpgroup waits once a tile before S^T's 36 wgmmas instead
# of once a chunk.  Call 5 (ncu, math with an idle producer): the math warpgroup is
# issue-bound (selected 27%), its nine full-barrier polls a tile between chunks ~12% of
# its samples.  Predicted: the math alone (idle) 224 -> 185-200 us; fp8 h16 349 -> 320-340,
# fp8_ds_mla 320 -> 300-315.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
GPU_FILE_TIMEOUT=150 checked_patch /tmp/tb next_narrow_tile_barrier.patch tb narrow fp8 sparse dense
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192"
BENCH_TIMEOUT=120 compare_rounds tb /tmp/tb
(cd /tmp/tb && PYTHONPATH=.:tests timeout 120 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 \
  fp8_ds_mla_b128_h16_s8192 --keep-mma --ablate idle,nomath >> "$L" 2>&1); say "tb sides exit $?"
cat "$L"
