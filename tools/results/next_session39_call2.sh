#!/usr/bin/env bash
# Session 39, call 2 (prepared in session 38 after its device budget; CPU-checked, not run):
#   OUT=$OUT bash tools/results/next_session39_call2.sh
# What a segment boundary costs the narrow kernel (NOTES.md, session 38's lead for the h16
# rows).  next_segment_cut_1.patch (/tmp/cut1: the aligned cut's threshold 8 -> 1 tiles, so
# b128 h16 and DeepSeek h16 uniform take the equal cut, 132 shares of ~125 tiles, nearly
# every share ending a sequence part-way) beside HEAD (aligned: 128 shares of whole
# sequences).  tools/narrow_phases.py now fits each CTA's span as fixed + tiles + boundaries.
# Predictions: HEAD no fit on the even rows (no boundaries; its ragged row has them: a fit);
# /tmp/cut1 ~2.3 us a tile and 14-17 us a boundary
# (session 35's rows: 300.9 -> 308.8 us at b128 h16); the rows as session 35's (+2.7%).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
# owed since session 37's call 1: the forced-portable GPU files (session 38 ran none; ~215 s)
PORTABLE_TIMEOUT=260 portable dense sparse fp8
say "portable files"
patched /tmp/cut1 next_segment_cut_1.patch
(cd /tmp/cut1 && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_cut1.txt 2>&1)
say "warm cut1: $(head -1 /tmp/warm_cut1.txt)"
check_tree /tmp/cut1 cut1 narrow
for t in . /tmp/cut1; do
  echo "== narrow phases $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 120 python3 tools/narrow_phases.py --cases b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged \
    >> "$L" 2>&1)
done
say "phases"
C="b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged" BENCH_TIMEOUT=120 bench_trees . /tmp/cut1
cat "$L"
