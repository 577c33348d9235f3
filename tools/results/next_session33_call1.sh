#!/usr/bin/env bash
# Session 33, call 1 (prepared in session 32, not run):  OUT=$OUT bash tools/results/next_session33_call1.sh
# Where the narrow 32-row tile still beats the ring at 17-32 rows over 16-bit caches (session
# 32 call 9: b8 h32 s8192 P=16 45.5 vs 46.1 us, b1 h32 s32768 P=61 35.6 vs 36.2; every longer
# split the other way): auto (now the ring) against the forced narrow tile over short and long
# splits, to place a split-keys crossover like the sparse rule's (compiler.narrow_auto_rows).
# Prediction: the narrow tile wins below ~1024 keys a split, the ring above.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
for r in 1 2; do
  for b in 1 4 8 16 32; do
    for c in 2048 8192 32768; do
      S="auto narrow" schedule_sweep "b${b}_c${c}" --batch-size $b --num-heads 32 --cache-len $c
    done
  done
  say "round $r"
done
cat "$L"
