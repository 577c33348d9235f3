#!/usr/bin/env bash
# Session 17, call 2 (device, repository root):  OUT=$OUT bash tools/results/session17_call2.sh
# Three prepared patches, each checked (tools/hopper_check.py: NaN-filled outputs, NaN in
# unused slots, permuted tables, ragged lengths, page sizes) and then timed beside HEAD,
# two rounds each, in one run:
# (p1) next_seesaw_p1_late.patch: warpgroup 1 publishes P(b) only after queueing both
#      P V_R, so warpgroup 0's P(b) V_L(b) and S(a+2) queue behind P(a)' V_R(a) (FlashMLA's
#      order; call 1's hotspots: 25% of our seesaw's stall samples wait on TMA, the R half
#      of a + 2 (refilled when P(a)' V_R(a) retires) the largest single wait of warpgroup 0).
#      Prediction: b128 h128 -3 to -6%, other seesaw rows alike.
# (bo) next_balanced_batch_order.patch (session 16): uniform one-wave rows back within 1%
#      of the P splits, ragged rows unchanged +-2%.
# (fs) next_narrow_first_slot.patch (session 16): h32 rows -2 to -3%, h16 equal.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm"
for v in p1:next_seesaw_p1_late bo:next_balanced_batch_order fs:next_narrow_first_slot; do
  d=/tmp/${v%%:*}; rm -rf $d && cp -r . $d && (cd $d && git apply tools/results/${v#*:}.patch) || say "apply $v failed"
done
(cd /tmp/p1 && PYTHONPATH=. timeout 120 python3 tools/hopper_check.py --schedule seesaw > $OUT/check_p1.txt 2>&1); say "check p1 exit $? $(tail -1 $OUT/check_p1.txt)"
(cd /tmp/bo && PYTHONPATH=. timeout 120 python3 tools/hopper_check.py --schedule seesaw --schedule ring > $OUT/check_bo.txt 2>&1); say "check bo exit $? $(tail -1 $OUT/check_bo.txt)"
(cd /tmp/fs && PYTHONPATH=. timeout 150 python3 tools/hopper_check.py --schedule narrow > $OUT/check_fs.txt 2>&1); say "check fs exit $? $(tail -1 $OUT/check_fs.txt)"
C="b128_h128_s8192 ds_h128_sq1_uniform ds_h128_sq1_ragged ds_h64_sq1_uniform ds_h64_sq1_ragged b32_h128_s4096 b128_sq2_h128_varlen"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  echo "== p1 late ($r)" >> "$L"; (cd /tmp/p1 && PYTHONPATH=. bench); say bench
  echo "== batch order ($r)" >> "$L"; (cd /tmp/bo && PYTHONPATH=. bench); say bench
done
C="ds_h32_sq1_uniform ds_h32_sq1_ragged ds_h16_sq2_ragged ds_h16_sq1_uniform"
for r in 1 2; do
  echo "== HEAD narrow ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  echo "== first slot ($r)" >> "$L"; (cd /tmp/fs && PYTHONPATH=. bench); say bench
done
cat "$L"
