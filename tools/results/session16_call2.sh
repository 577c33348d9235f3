#!/usr/bin/env bash
# Session 16, call 2.  (a) session 15's prepared narrow patches (next_session16_call2.sh's
# predictions: unsigned ring 32-row rows 1-2% faster; which half of the slot broadcast costs
# the 16-row tile 2%; one 32-row warpgroup with the broadcast: uniform ~183, ragged ~215),
# each checked first, then timed beside HEAD, two rounds.  (b) Where each row's time goes,
# ours and FlashMLA's, kernel by kernel (tools/kernel_times.py, ncu, L2 flushed, the GPU's
# clocks): is the gap in the decode or in the combine?  Prediction: FlashMLA's combine is
# 2-4 us where ours is 6-13.  (c) ncu_hotspots of the 32-row tile, if time is left.
# Usage (device, repository root, .whl carried): OUT=$OUT bash tools/results/session16_call2.sh
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
C="b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged ds_h32_sq1_uniform ds_h32_sq1_ragged"
. tools/results/device_steps.sh   # say, bench
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1; say "peers installed"
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm HEAD"
P="narrow_unsigned_ring m16_broadcast_ot m16_broadcast_st m32_one_wg_broadcast"
for p in $P; do
  rm -rf /tmp/$p && cp -r . /tmp/$p && (cd /tmp/$p && git apply tools/results/next_$p.patch) || { say "$p: apply failed"; rm -rf /tmp/$p; continue; }
  (cd /tmp/$p && PYTHONPATH=. timeout 120 python3 tools/hopper_check.py --schedule narrow > $OUT/check_$p.txt 2>&1; echo "exit $?" >> $OUT/check_$p.txt) &
done
wait; say "checks done"
for p in $P; do echo "-- $p: $(grep "correctness\|^FAIL\|^exit" $OUT/check_$p.txt | head -3 | tr '\n' ' ')" >> "$L"; done
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  for p in $P; do
    [ -d /tmp/$p ] || continue
    echo "== $p ($r)" >> "$L"; (cd /tmp/$p && PYTHONPATH=. bench); say bench
  done
done
K="b32_h128_s4096 b8_h16_s8192 ds_h16_sq1_ragged ds_h32_sq1_uniform b128_h128_s8192"
PYTHONPATH=. timeout 150 python3 tools/kernel_times.py $K --calls 3 > $OUT/kernel_times.txt 2>&1; say "kernel_times ours exit $?"
PYTHONPATH=.:/tmp/site timeout 200 python3 tools/kernel_times.py $K --calls 3 --peer flashmla >> $OUT/kernel_times.txt 2>&1; say "kernel_times flashmla exit $?"
cut -c1-140 $OUT/kernel_times.txt >> "$L"
left=$((560 - (SECONDS - T0)))
[ $left -gt 60 ] && { PYTHONPATH=. timeout $left python3 tools/ncu_hotspots.py ds_h32_sq1_uniform mla_decode --top 30 --out /tmp/hs \
  > $OUT/hotspots_m32.txt 2>&1; say "hotspots exit $?"; }
cat "$L"
