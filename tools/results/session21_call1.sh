#!/usr/bin/env bash
# Session 21 call 1 (ran 2026-12-02; prepared in session 20 as next_session21_call1.sh; the patch has since landed). Device, repository root:
#   OUT=$OUT bash tools/results/next_session21_call1.sh
# rp = next_ring_producer.patch: the ring's producer warpgroup loads every variant's tiles
#      (dense 16-bit too), and what that leaves dead goes: warpgroup 1's own loads, the
#      ring's opt-in TMA loads (MLA_CUPY_HOPPER_LOADS=tma is refused now; "cp_async" or
#      unset pass), the tile-ready / buffer-free named barriers.  Sparse and fp8 variants'
#      SASS is identical to HEAD's (nvdisasm, 4 variants); every ring variant compiles
#      without spills; CPU suite and the protocol model pass.  Session 20's experimental
#      form (PRODUCER = true alone) measured -2.5% on the 64-row DeepSeek rows (call 5) but
#      faulted in the forced-TMA test mode, which this patch removes.
#      Prediction: the same -2.5% on ring rows; fp8 and sparse rows unchanged (same SASS).
# Check (hopper_check ring, full), the GPU files dense / hardening / sparse / fp8 on rp,
# then two rounds beside HEAD.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched, warm_kernels
patched /tmp/rp next_ring_producer.patch
(cd /tmp/rp && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm rp: $(head -1 /tmp/warm.txt)"
K="mla_decode_bf16_causal_dense_fold0_hopper mla_decode_fp8_ds_mla_null_sparse_fold0_hopper"
warm_kernels .
(cd /tmp/rp && PYTHONPATH=. timeout 200 python3 tools/hopper_check.py --schedule ring > $OUT/check_rp.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_rp.txt) &
for f in dense hardening sparse fp8; do
  (cd /tmp/rp && PYTHONPATH=.:tests timeout 260 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
     tests/test_gpu_$f.py > /tmp/t_$f.log 2>&1; echo "[$f exit $?]" >> /tmp/t_$f.log) &
done
wait
say "check rp: $(grep -h 'correctness\|CRASH\|exit' $OUT/check_rp.txt | tr '\n' ' ')"
for f in dense hardening sparse fp8; do say "rp $f: $(tail -2 /tmp/t_$f.log | tr '\n' ' ')"; cat /tmp/t_$f.log >> $OUT/tests_rp.log; done
C="ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h16_sq4_ragged ds_h16_sq4_uniform sparse_ds_mla_b128_sq1_h128 fp8_b128_h128_s8192"
ROUNDS=2 BENCH_TIMEOUT=120 compare_rounds rp /tmp/rp
cat "$L"
