#!/usr/bin/env bash
# Session 32, call 9 (device, repository root):  OUT=$OUT bash tools/results/session32_call9.sh
# Call 8: at 32 rows over bf16 the ring (64-row tile, padded) beat auto's narrow 32-row tile
# (DeepSeek h32 uniform 166.9 vs 175.7 us, ragged 187.8 vs 190.7; the seesaw was the slowest
# at 32 and 64 rows).  Here the same comparison over other 17-32-row groups before the rule
# moves: DeepSeek h16 s_q2, a short batch, a long sequence, 24 heads, fp16, page 16.
# Prediction: the ring within 2% of the narrow tile or faster on every row.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
run_case() {   # label, bench arguments
  local label=$1; shift
  for s in auto ring; do
    echo "== $label $s" >> "$L"
    MLA_CUPY_HOPPER_SCHEDULE=$s PYTHONPATH=. timeout 80 python3 tools/bench.py "$@" --repeats 20 --check-seqs 2 2>&1 \
      | grep -v "^#" | cut -c1-110 >> "$L"
  done
}
for r in 1 2; do
  run_case named ds_h16_sq2_uniform ds_h16_sq2_ragged ds_h32_sq1_uniform
  run_case b8_h32 --batch-size 8 --num-heads 32 --cache-len 8192
  run_case b1_h32 --batch-size 1 --num-heads 32 --cache-len 32768
  run_case b128_h24 --batch-size 128 --num-heads 24 --cache-len 8192
  run_case b64_h32_fp16 --batch-size 64 --num-heads 32 --cache-len 8192 --layout fp16
  run_case b64_h32_page16_ragged --batch-size 64 --num-heads 32 --cache-len 8192 --page-size 16 --lengths normal
  say "round $r"
done
cat "$L"
