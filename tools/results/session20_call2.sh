#!/usr/bin/env bash
# Session 20, call 2 (device, repository root):  OUT=$OUT bash tools/results/session20_call2.sh
#  ld = next_seesaw_loader.patch: the seesaw gains a loading warpgroup (384 threads; setmaxnreg
#       232 / 232 / 40).  Warp w of it refills half w >> 1 of buffer w & 1 when the half's
#       last reader arrives on its empty mbarrier; the page lookups and TMA issue leave warp 0
#       of the math warpgroups.  The set-up's results reach both regions through shared
#       memory (CtaArgs; through registers ptxas spilled them, some reloaded in the loop).
#       Session 19: PageDiv in warp 0 alone took the seesaw rows -8 to -12%, i.e. the math
#       warpgroups pay for integer work between their wgmmas; call 1's hotspots still show
#       BSSY/BSYNC and branch_resolving samples around warp 0's page work.
#       Prediction: seesaw rows -2 to -5% (b128 h128 ~482 -> 460-470).
#  l2 = next_seesaw_loader_l2.patch: ld, and the left half's loader warp prefetches the next
#       tile of its buffer into L2 (whole box rows) a pair ahead.  Session 18's prefetch by
#       warp 0 took the TMA-wait samples 15.8 k -> 9.3 k but cost more on the math path;
#       here the prefetch costs the math nothing.  Prediction: a further -3 to -6%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched
patched /tmp/ld next_seesaw_loader.patch
patched /tmp/l2 next_seesaw_loader_l2.patch
K="mla_decode_bf16_causal_dense_fold0_hopper_seesaw mla_combine_bf16 mla_combine_bf16_warp_rows"
for d in . /tmp/ld /tmp/l2; do
  for k in $K; do
    (cd $d && PYTHONPATH=. timeout 200 python3 -c "from mla_cupy.compiler import get_kernel; get_kernel('$k')" \
      > /dev/null 2>&1 || echo "warm $d $k failed" >> "$L") &
  done
done
for d in ld l2; do
  (cd /tmp/$d && PYTHONPATH=. timeout 230 python3 tools/hopper_check.py --schedule seesaw > $OUT/check_$d.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_$d.txt) &
done
wait
for d in ld l2; do say "check $d: $(grep -h 'correctness\|CRASH\|exit' $OUT/check_$d.txt | tr '\n' ' ')"; done
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096 b128_sq2_h128_varlen_causal b1_h128_s65536"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; BENCH_TIMEOUT=100 PYTHONPATH=. bench; say bench
  for d in ld l2; do
    echo "== $d ($r)" >> "$L"; (cd /tmp/$d && BENCH_TIMEOUT=100 PYTHONPATH=. bench); say bench
  done
done
for d in ld l2; do
  (cd /tmp/$d && timeout 100 python3 tools/ncu_hotspots.py b128_h128_s8192 hopper_seesaw --top 40 --out /tmp/hs/$d \
     > $OUT/hotspots_$d.txt 2>&1; say "hotspots $d $?")
done
cat "$L"
