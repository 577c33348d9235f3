#!/usr/bin/env bash
# Session 33, call 1 (device, repository root):  OUT=$OUT bash tools/results/session33_call1.sh
# 1. The forced-portable GPU files (MLA_CUPY_BACKEND=portable) on HEAD, owed since session
#    32's routing change (6a6542a).  Prediction: all pass (dense 90, sparse 31, fp8 12).
# 2. next_session33_call1.sh's sweep, one round: auto (the ring at 17-32 rows of a 16-bit
#    cache) against the forced narrow 32-row tile over b 1-32 x c 2048-32768 at h32, for a
#    split-keys crossover.  Prediction: the narrow tile wins below ~1024 keys a split.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PORTABLE_TIMEOUT=220 portable dense sparse fp8
say "portable files"
for b in 1 4 8 16 32; do
  for c in 2048 8192 32768; do
    S="auto narrow" schedule_sweep "b${b}_c${c}" --batch-size $b --num-heads 32 --cache-len $c
  done
done
say "sweep"
cat "$L"
