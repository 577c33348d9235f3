#!/usr/bin/env bash
# Session 37, call 6 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session37_call6.sh
# Calls 4-5: a refill's issue (empty mbarrier passed -> its copies issued) took ~820 clocks
# for a left half, ~1000-1400 for a right one; each copy ~150-170 clocks of its warp.  On
# 64-key pages the map's boxes are 32 rows (tensor_map.box_rows' 32-key rule), so a 64-key
# tile is 18 copies.  next_box_rows_64.patch (/tmp/bx): a box as tall as the kernel's tile
# (64 rows) where the page holds whole tiles: 9 copies a tile, for the seesaw and the narrow
# kernel.  Predictions: the refill probe's issue step ~820 -> ~450 clocks (left) and
# ~1100 -> ~600 (right); the h128 rows -2 to -5% (the right half's landing bounds the pair);
# the narrow rows (b8, b128 h16, DeepSeek h16) flat to -2%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=200 checked_patch /tmp/bx next_box_rows_64.patch bx seesaw dense
check_tree /tmp/bx bx_narrow narrow
(cd /tmp/bx && PYTHONPATH=.:tests timeout 60 python3 tools/results/session37_refill_probe.py ds_h128_sq1_uniform >> "$L" 2>&1)
say "refill probe bx $?"
C="ds_h128_sq1_uniform ds_h128_sq1_ragged b128_h128_s8192 b128_sq2_h128_varlen_causal b32_h128_s4096 b1_h128_s65536 b8_h16_s8192 b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged" \
  BENCH_TIMEOUT=200 bench_trees . /tmp/bx
(cd /tmp/bx && COMMIT=5aea63b+next_box_rows_64 PEER_TIMEOUT=170 peer_all_rows)
cat "$L"
