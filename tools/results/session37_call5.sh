#!/usr/bin/env bash
# Session 37, call 5 (device, repository root):  OUT=$OUT bash tools/results/session37_call5.sh
# Call 4: from a half's empty mbarrier passing to its boxes issued took ~820 clocks (4 box
# copies) and ~950-1380 (5), though the SASS between them is ~12 instructions a copy
# (UTMALDG, no memory read).  session37_refill_probe.py now stamps tile 8's loaders after
# the expect_tx arrivals and after each copy; PREFETCH_MAP=1 adds prefetch.tensormap once
# the half is free.  Predictions: if a copy's issue fetches the tensor map's descriptor
# (param space), the first copy takes most of it and PREFETCH_MAP=1 moves that cost before
# the arrivals; if every copy costs ~200 clocks, the TMA unit's queue is the bound (fewer,
# larger boxes are the lever).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
for pm in 0 1; do
  echo "== PREFETCH_MAP=$pm" >> "$L"
  PREFETCH_MAP=$pm PYTHONPATH=.:tests timeout 120 python3 tools/results/session37_refill_probe.py ds_h128_sq1_uniform \
    b128_h128_s8192 >> "$L" 2>&1
  say "refill probe $pm $?"
done
MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=.:tests timeout 60 python3 tools/results/session37_refill_probe.py \
  ds_h64_sq1_uniform >> "$L" 2>&1
say "refill probe h64 seesaw $?"
cat "$L"
