#!/usr/bin/env bash
# Session 22, call 6.  Device, repository root:  OUT=$OUT bash tools/results/session22_call6.sh
# pp = session22_pair_prologue.patch: the pair's Q loaded by the math warpgroups only, the
#   cluster barrier split (arrive after the set-up, wait by each role before its first remote
#   operation), and the producer's first tile's index lookups and record loads issued in
#   between, under the Q load; the loop requests tile t + 1's bytes as it publishes tile t.
# Prediction: ~1.5-2 us a CTA wave: b128 s_q1 191.8 -> 188-190, s_q2 372 -> 365-368,
#   b2 s_q2 30.1 -> 28.5-29.5.  Then the split sweep of b2 s_q2 (P=13 chosen).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/pp session22_pair_prologue.patch
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair mla_decode_fp8_ds_mla_causal_sparse_fold0_hopper_pair mla_combine_bf16_warp_rows"
warm_kernels . /tmp/pp; say "warm"
(cd /tmp/pp && PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule pair > $OUT/check_pp.txt 2>&1)
rc=$?; say "check pp exit $rc: $(grep -h 'correctness' $OUT/check_pp.txt)"
if [ $rc -ne 0 ]; then cat "$L"; grep FAIL $OUT/check_pp.txt | cut -c1-300; exit 1; fi
(cd /tmp/pp && PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
   tests/test_gpu_sparse.py > /tmp/t_sparse.log 2>&1; echo "[sparse exit $?]" >> /tmp/t_sparse.log)
say "pp sparse: $(tail -2 /tmp/t_sparse.log | tr '\n' ' ')"
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b2_sq2_h128"
ROUNDS=2 BENCH_TIMEOUT=100 compare_rounds pp /tmp/pp
PYTHONPATH=.:tests timeout 100 python3 tools/split_sweep.py sparse_ds_mla_b2_sq2_h128:4,6,8,10,13,16,22 >> "$L" 2>&1
say "sweep $?"
(cd /tmp/pp && PYTHONPATH=. timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py \
  > /tmp/memcheck.log 2>&1); say "pp memcheck exit $?: $(grep -h 'ERROR SUMMARY\|cases done' /tmp/memcheck.log | tr '\n' ' ')"
cat "$L"
