#!/usr/bin/env bash
# Prepared in session 25 (CPU-checked, not run).  Device, repository root:
#   OUT=$OUT bash tools/results/next_session26_call2.sh
# rh = next_narrow_raw_halves.patch: the narrow fp8 producer's raw records in half-tiles
# of 32 keys, three of them where the slots left keep CHUNKS + V_CHUNKS + 1 (fp8 at 16
# rows: 18 slots, so the producer still runs a tile ahead of the math; fp8_ds_mla keeps
# two halves = one tile, 20 slots).  Each warp with h = 0 copies its half's keys; each
# half-buffer has a full (copier) and an empty (its two readers) mbarrier, so no
# warpgroup-wide barrier sits between reading a tile and issuing the next copies, and
# warp 0 copies two tiles ahead: a tile and a half of records in flight or landed.
# Session 25: without wgmma the producer took 2.4 us a tile, 1.8 with nothing moved;
# its serial chain was: copy issued after the whole tile was read, ~0.5 us of work,
# then a wait for that copy.  Predicted: fp8 h16 357 -> 230-290 us; fp8_ds_mla h16 within
# +-3% (same buffers, the named barrier replaced by per-half mbarriers).  Run call 1's
# ablations first: if nolookup or the math side dominates, this patch is not the lever.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
GPU_FILE_TIMEOUT=120 checked_patch /tmp/rh next_narrow_raw_halves.patch rh narrow fp8 sparse
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192"
BENCH_TIMEOUT=120 compare_rounds rh /tmp/rh
(cd /tmp/rh && PYTHONPATH=.:tests timeout 120 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 \
  --ablate nocopy+noconvert+nostore >> "$L" 2>&1); say "rh ceiling exit $?"
cat "$L"
