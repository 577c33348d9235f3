#!/usr/bin/env bash
# Session 26, call 1.  Device, repository root:  OUT=$OUT bash tools/results/session26_call1.sh
# = next_session26_call1.sh (the narrow fp8 producer's skeleton split by ablations) then
# next_session26_call2.sh (rh: raw half-tiles, checked then timed; predictions in those
# files), then the bench's environment record on its first GPU run.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=.:tests timeout 200 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192 \
  --ablate nolookup,nocopy+noconvert+nostore,nocopy+noconvert+nostore+nolookup >> "$L" 2>&1; say "ceiling exit $?"
PYTHONPATH=.:tests timeout 150 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 --keep-mma \
  --ablate nocopy+noconvert+nostore,nolookup >> "$L" 2>&1; say "keep-mma exit $?"
PYTHONPATH=.:tests timeout 100 python3 tools/producer_ceiling.py b128_h16_s8192 >> "$L" 2>&1; say "bf16 exit $?"
GPU_FILE_TIMEOUT=120 checked_patch /tmp/rh next_narrow_raw_halves.patch rh narrow fp8 sparse
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192"
BENCH_TIMEOUT=120 compare_rounds rh /tmp/rh
(cd /tmp/rh && PYTHONPATH=.:tests timeout 120 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 \
  --ablate nocopy+noconvert+nostore >> "$L" 2>&1); say "rh ceiling exit $?"
PYTHONPATH=. timeout 100 python3 -m mla_cupy bench b8_h16_s8192 --repeats 20 --check-seqs 2 --json $OUT/env.json \
  2>&1 | head -4 | cut -c1-300 >> "$L"; say "env bench exit $?"
cat "$L"
