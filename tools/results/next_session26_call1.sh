#!/usr/bin/env bash
# Prepared in session 25 (not run).  Device, repository root:
#   OUT=$OUT bash tools/results/next_session26_call1.sh
# Split the narrow fp8 kernel's 1.8 us a tile of skeleton (session 25 call 7: without
# wgmma, copies, decode and stores it still took 223.8 of 355.3 us):
# 1. without wgmma: the lookups (nolookup), and everything (nocopy+noconvert+nostore+nolookup);
# 2. with wgmma (--keep-mma): the producer's copies, decode and stores gone (the math
#    warpgroup and the hand-overs alone), and the lookups gone;
# 3. the bf16 h16 row without wgmma, for the math side's skeleton on a TMA-fed ring.
# Predictions: if the math warpgroup's side of each hand-over bounds it, (2)'s first line
# stays near 290-330 us and (1)'s last near 224; if the lookups do, nolookup takes 30-60 us.
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=.:tests timeout 200 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192 \
  --ablate nolookup,nocopy+noconvert+nostore,nocopy+noconvert+nostore+nolookup >> "$L" 2>&1; say "ceiling exit $?"
PYTHONPATH=.:tests timeout 150 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 --keep-mma \
  --ablate nocopy+noconvert+nostore,nolookup >> "$L" 2>&1; say "keep-mma exit $?"
PYTHONPATH=.:tests timeout 100 python3 tools/producer_ceiling.py b128_h16_s8192 >> "$L" 2>&1; say "bf16 exit $?"
cat "$L"
