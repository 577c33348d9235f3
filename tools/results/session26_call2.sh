#!/usr/bin/env bash
# Session 26, call 2.  Device, repository root:  OUT=$OUT bash tools/results/session26_call2.sh
# The narrow kernel's two sides apart (producer_ceiling's new idle / nomath ablations, wgmma
# kept): call 1 found the fp8 kernel at 355 us, its producer without wgmma 295, and the math
# with the producer's work gone (its skeleton kept) 302, so both sides sit near 2.4 us a
# tile and neither alone explains the full kernel.  idle = the producer only waits for
# empty slots and arrives on full ones; nomath = the math only waits and releases.
# Predictions: idle (math + bare hand-over) 150-200 us if the producer's skeleton is what
# held call 1's 302 (the math alone, narrow_probe --rate: ~1.05 us a tile = 130 us);
# nomath (the producer with its real work) 250-290; idle+nomath (the bare hand-over) < 60.
# bf16: nomath is the TMA loader alone (memory: ~290 at b128; b8 shows the fixed cost).
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=.:tests timeout 200 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192 \
  --keep-mma --ablate idle,nomath,idle+nomath >> "$L" 2>&1; say "fp8 sides exit $?"
PYTHONPATH=.:tests timeout 150 python3 tools/producer_ceiling.py b128_h16_s8192 b8_h16_s8192 ds_h16_sq1_ragged \
  --keep-mma --ablate nomath >> "$L" 2>&1; say "bf16 sides exit $?"
PYTHONPATH=. timeout 60 python3 tools/narrow_probe.py --rate >> "$L" 2>&1; say "probe rate exit $?"
cat "$L"
