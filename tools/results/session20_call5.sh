#!/usr/bin/env bash
# Session 20, call 5 (device, repository root):  OUT=$OUT bash tools/results/session20_call5.sh
#  rp = next_ring_dense_producer.patch: the ring's producer warpgroup (sparse and fp8 since
#       sessions 7-8) for dense 16-bit caches too: warpgroup 1 no longer loads tiles by
#       cp.async between its P V; budgets 216 / 168 / 120 as for the sparse ring.  Call 4:
#       the ring at 64 rows is 10% ahead of the seesaw there, 0.87 / 0.90 of the best peer
#       (ds h64 ragged / uniform).  Prediction (low confidence: warpgroup 0 is the ring's
#       critical path, and warpgroup 1 loads while it waits for P): ring rows -1 to -4%.
# Checked (hopper_check --schedule ring, the dense and hardening GPU files on rp) before
# it is timed; then the seesaw's phase probe at HEAD (where a CTA's time goes now).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched
patched /tmp/rp next_ring_dense_producer.patch
(cd /tmp/rp && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm rp: $(head -1 /tmp/warm.txt)"
(PYTHONPATH=. timeout 100 python3 -c "from mla_cupy.compiler import get_kernel; get_kernel('mla_decode_bf16_causal_dense_fold0_hopper')" \
   > /dev/null 2>&1 || echo "warm HEAD failed" >> "$L")
(cd /tmp/rp && PYTHONPATH=. timeout 200 python3 tools/hopper_check.py --schedule ring > $OUT/check_rp.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_rp.txt) &
for f in dense hardening; do
  (cd /tmp/rp && PYTHONPATH=.:tests timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
     tests/test_gpu_$f.py > /tmp/t_$f.log 2>&1; echo "[$f exit $?]" >> /tmp/t_$f.log) &
done
wait
say "check rp: $(grep -h 'correctness\|CRASH\|exit' $OUT/check_rp.txt | tr '\n' ' ')"
for f in dense hardening; do say "rp tests: $(tail -2 /tmp/t_$f.log | tr '\n' ' ')"; cat /tmp/t_$f.log >> $OUT/tests_rp.log; done
C="ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h16_sq4_ragged ds_h16_sq4_uniform"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  echo "== rp ($r)" >> "$L"; (cd /tmp/rp && PYTHONPATH=. bench); say bench
done
PYTHONPATH=.:tests timeout 100 python3 tools/phase_probe.py --cases ds_h128_sq1_uniform ds_h128_sq1_ragged \
  b32_h128_s4096:2 b128_h128_s8192 > $OUT/phases.txt 2>&1; say "phase probe $?"
cat "$L"
