#!/usr/bin/env bash
# Session 26, call 5 (9641288: two producer warpgroups).  Device, repository root:
#   OUT=$OUT bash tools/results/session26_call5.sh
# Where each side of the fp8 narrow kernel waits (ncu warp-stall samples by SASS line):
# the producer with the math reduced to its hand-over (nomath: 264-273 us, 245 without its
# copies: ~2 us a tile that neither the thread count nor the copies explain), the math
# with an idle producer (idle: 222 us against narrow_probe's 130 for the math alone),
# and the full kernel.
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
K=mla_decode_fp8_causal_dense_fold0_m16_hopper_narrow
for a in nomath idle full; do
  if [ $a = full ]; then ab=""; else ab="--ablate $a"; fi
  PYTHONPATH=.:tests timeout 120 python3 tools/ncu_hotspots.py fp8_b128_h16_s8192 $K --top 45 --out /tmp/ncu_$a $ab \
    > $OUT/hotspots_$a.txt 2>&1
  say "hotspots $a exit $?"
done
PYTHONPATH=.:tests timeout 100 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192 \
  --keep-mma --ablate idle,nomath >> "$L" 2>&1; say "sides exit $?"
cat "$L"
