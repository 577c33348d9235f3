#!/usr/bin/env bash
# Session 20, call 3 (device, repository root):  OUT=$OUT bash tools/results/session20_call3.sh
# Call 2 (2 rounds, us, HEAD / ld / l2): ds h128 ragged 307.0 / 305.0 / 294.2, uniform 256.2 /
# 261.4 / 248.4, b128 h128 483.0 / 495.4 / 481.8, b32 92.4 / 90.0 / 86.3, varlen 989.5 / 968.1 /
# 969.1, b1 61.4 / 57.3 / 54.4.  The loader alone gains where a CTA's fixed cost weighs
# (short, ragged) and loses 2-3% on long uniform rows (per tile); the L2 prefetch wins back
# more everywhere but b128.  Two variants of l2 ask why:
#  r240 = l2 with budgets 240 / 240 / 24 (the loader spills 12 bytes, in its own region): is
#         the math warpgroups' 232-register cap what costs the long rows?  Prediction if so:
#         b128 483 -> ~470, uniform 248 -> ~243.
#  lead2 = l2 prefetching two pairs ahead (page ids a pair further ahead): is a pair's lead
#         too short under two waves' DRAM load?  Prediction if so: b128 -2 to -4%.
# Then the GPU test files dense and hardening on l2 (the candidate), and l2's hotspots.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched
patched /tmp/l2 next_seesaw_loader_l2.patch
patched /tmp/r240 next_seesaw_loader_l2_r240.patch
patched /tmp/lead2 next_seesaw_loader_l2_lead2.patch
(cd /tmp/l2 && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm l2: $(head -1 /tmp/warm.txt)"
K="mla_decode_bf16_causal_dense_fold0_hopper_seesaw"
for d in . /tmp/r240 /tmp/lead2; do
  (cd $d && PYTHONPATH=. timeout 200 python3 -c "from mla_cupy.compiler import get_kernel; get_kernel('$K')" \
      > /dev/null 2>&1 || echo "warm $d failed" >> "$L") &
done
wait
for d in r240 lead2; do
  (cd /tmp/$d && PYTHONPATH=. timeout 200 python3 tools/hopper_check.py --schedule seesaw --quick > $OUT/check_$d.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_$d.txt) &
done
for f in dense hardening; do
  (cd /tmp/l2 && PYTHONPATH=.:tests timeout 260 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
     tests/test_gpu_$f.py > /tmp/t_$f.log 2>&1; echo "[$f exit $?]" >> /tmp/t_$f.log) &
done
wait
for d in r240 lead2; do say "check $d: $(grep -h 'correctness\|CRASH\|exit' $OUT/check_$d.txt | tr '\n' ' ')"; done
for f in dense hardening; do say "l2 tests: $(tail -2 /tmp/t_$f.log | tr '\n' ' ')"; cat /tmp/t_$f.log >> $OUT/tests_l2.log; done
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096 b128_sq2_h128_varlen_causal b1_h128_s65536"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; BENCH_TIMEOUT=100 PYTHONPATH=. bench; say bench
  for d in l2 r240 lead2; do
    echo "== $d ($r)" >> "$L"; (cd /tmp/$d && BENCH_TIMEOUT=100 PYTHONPATH=. bench); say bench
  done
done
(cd /tmp/l2 && PYTHONPATH=. timeout 100 python3 tools/ncu_hotspots.py b128_h128_s8192 hopper_seesaw --top 50 --out /tmp/hs/l2 \
     > $OUT/hotspots_l2.txt 2>&1; say "hotspots l2 $?")
cat "$L"
