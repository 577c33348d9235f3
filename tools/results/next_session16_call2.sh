#!/usr/bin/env bash
# Prepared in session 15 (CPU-checked; not run).  Run after a full `tools/gpu_run.sh` of HEAD.
# Three narrow-kernel patches against HEAD, interleaved, two rounds, each first checked:
#  - next_narrow_unsigned_ring.patch: a ring position's slot and parity by unsigned division
#    (positions are never negative): HGMMA span 2174 -> 2103 instructions at 32 rows, 2354 ->
#    2330 at 16.  Prediction: 32-row rows 1-2% faster, 16-row unchanged.
#  - next_m16_broadcast_ot.patch / _st.patch: session 15's unexplained 2% loss of the 16-row
#    tile under the slot broadcast, split: O^T's slots only (span 2250, R2UR 161) and S^T's
#    only, before the wait (span 2192, R2UR 148).  Which half costs the 2%?
#  - next_m32_one_wg_broadcast.patch: the 32-row tile as one warpgroup again, with the slot
#    broadcast (HGMMA span 2833 instructions, 246 registers; two warpgroups issue 2 x 2174 a
#    scheduler).  At 3153fa1 one warpgroup tied two on uniform (193 / 192) and lost ragged
#    (229 / 213).  Prediction: uniform ~183, ragged ~215: two warpgroups stay.
# Then where the 32-row tile's time goes now (tools/ncu_hotspots.py: reason, opcode, top
# instructions; only its printed report is kept).
# Usage (device, repository root): OUT=$OUT bash tools/results/next_session16_call2.sh
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
C="b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged ds_h32_sq1_uniform ds_h32_sq1_ragged"
. tools/results/device_steps.sh   # say, bench
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm HEAD"
for p in narrow_unsigned_ring m16_broadcast_ot m16_broadcast_st m32_one_wg_broadcast; do
  rm -rf /tmp/$p && cp -r . /tmp/$p && (cd /tmp/$p && git apply tools/results/next_$p.patch) || { say "$p: apply failed"; continue; }
  (cd /tmp/$p && PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule narrow > $OUT/check_$p.txt 2>&1); say "$p check exit $?"
  grep "correctness\|^FAIL" $OUT/check_$p.txt | head -3 >> "$L"
done
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  for p in narrow_unsigned_ring m16_broadcast_ot m16_broadcast_st m32_one_wg_broadcast; do
    [ -d /tmp/$p ] || continue
    echo "== $p ($r)" >> "$L"; (cd /tmp/$p && PYTHONPATH=. bench); say bench
  done
done
PYTHONPATH=. timeout 150 python3 tools/ncu_hotspots.py ds_h32_sq1_uniform mla_decode --top 30 --out /tmp/hs \
  > $OUT/hotspots_m32.txt 2>&1; say "hotspots exit $?"
cat "$L"
