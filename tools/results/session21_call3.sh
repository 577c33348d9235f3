#!/usr/bin/env bash
# Session 21, call 3 (device, repository root):  OUT=$OUT bash tools/results/session21_call3.sh
# The pair schedule (kernels/hopper/mla_decode_pair.cu.j2, new, CPU-checked only): sparse
# fp8_ds_mla at 128 k heads in clusters of two CTAs, each gathering half of every 64-slot tile
# straight into registers (FlashMLA's loads, our code), dequantising it and storing it into
# both CTAs' buffers (st.async to the peer); 64-slot tiles in two buffers; warpgroup 0 S +
# softmax + O[:, :256], warpgroup 1 O[:, 256:] with P from j's rope chunk.
# Prediction: b128 s_q1 h128 219 -> 185-200 us (FlashMLA 181), s_q2 426 -> ~370, b64 s_q2 same
# as b128 s_q1, b2 s_q2 30 -> ~27.  If it lands near the ring, the producer's instruction
# issue (not the hand-over) is its cost and the profile will say so.
# 1. A quick hopper_check of the pair alone (a hang or a fault stops the call here).
# 2. hopper_check --schedule pair in full; the sparse, hardening and fp8 GPU files (auto now
#    routes these shapes to the pair); memcheck of the adversarial sparse cases (one is h128
#    fp8_ds_mla: the pair).
# 3. Two rounds: the ring (forced) and the pair (auto) on issue 9's h128 rows.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
(PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm: $(head -1 /tmp/warm.txt)"
PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule pair --quick > $OUT/check_pair_quick.txt 2>&1
rc=$?; say "quick check pair exit $rc: $(grep -h 'correctness' $OUT/check_pair_quick.txt)"
if [ $rc -ne 0 ]; then cat "$L"; tail -30 $OUT/check_pair_quick.txt; exit 1; fi
(PYTHONPATH=. timeout 200 python3 tools/hopper_check.py --schedule pair > $OUT/check_pair.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_pair.txt) &
for f in sparse hardening fp8; do
  (PYTHONPATH=.:tests timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
     tests/test_gpu_$f.py > /tmp/t_$f.log 2>&1; echo "[$f exit $?]" >> /tmp/t_$f.log) &
done
wait
say "check pair: $(grep -h 'correctness\|CRASH\|exit' $OUT/check_pair.txt | tr '\n' ' ')"
for f in sparse hardening fp8; do say "$f: $(tail -2 /tmp/t_$f.log | tr '\n' ' ')"; cat /tmp/t_$f.log >> $OUT/tests.log; done
PYTHONPATH=. timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py \
  > /tmp/memcheck.log 2>&1; say "memcheck exit $?: $(grep -h 'ERROR SUMMARY\|cases done' /tmp/memcheck.log | tr '\n' ' ')"
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128"
export PYTHONPATH=.
for r in 1 2; do
  echo "== ring, forced ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=ring BENCH_TIMEOUT=100 bench; say bench
  echo "== pair, auto ($r)" >> "$L"; BENCH_TIMEOUT=100 bench; say bench
done
cat "$L"
