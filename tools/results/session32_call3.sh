#!/usr/bin/env bash
# Session 32, call 3 (device, repository root):  OUT=$OUT bash tools/results/session32_call3.sh
# DeepSeek h32 (and h16 s_q2) as two 16-row narrow tiles a sequence in split mode
# (tools/results/h32_as_16_row_tiles.py), beside HEAD's 32-row tile: the 16-row tile runs
# at copy bandwidth (h16 162 us) and the two row tiles of a split, adjacent in launch
# order, should find the second read of their keys in L2.  Prediction: uniform 174 ->
# 163-168, ragged 191 -> 185-195 (split mode's ragged tail: no segment mode with two row
# tiles a sequence); if the second reads miss L2, ~2x.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
C="ds_h32_sq1_uniform ds_h32_sq1_ragged ds_h16_sq2_uniform ds_h16_sq2_ragged"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench
  echo "== two 16-row tiles ($r)" >> "$L"
  PYTHONPATH=. timeout 120 python3 tools/results/h32_as_16_row_tiles.py $C --repeats 20 --check-seqs 2 2>&1 \
    | grep -v "^# wrote" | cut -c1-160 >> "$L"
  say "round $r"
done
cat "$L"
