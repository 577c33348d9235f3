#!/usr/bin/env bash
# Session 25, call 7.  Device, repository root:  OUT=$OUT bash tools/results/session25_call7.sh
# Where the narrow kernel's fp8 producer spends its ~2.8 us a 64-key tile (calls 3 and 6:
# neither the conversions nor a second copy in flight moved it much): the kernel without
# wgmma, then without its copies, its decode, its stores, all three (producer_ceiling.py,
# the narrow producer's ablations since this call), and ncu's stall samples by instruction.
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
PYTHONPATH=.:tests timeout 150 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 \
  --ablate nocopy,noconvert,nostore,nocopy+noconvert+nostore >> "$L" 2>&1; say "ceiling exit $?"
PYTHONPATH=.:tests timeout 100 python3 tools/ncu_hotspots.py fp8_b128_h16_s8192 \
  mla_decode_fp8_causal_dense_fold0_m16_hopper_narrow --top 30 --out /tmp/ncu > $OUT/hotspots.txt 2>&1
say "hotspots exit $?"
cat "$L"; head -60 $OUT/hotspots.txt
