#!/usr/bin/env bash
# Session 22, call 8.  Device, repository root:  OUT=$OUT bash tools/results/session22_call8.sh
# pp2 = session22_pair_prologue2.patch: call 6's prologue (Q by the math warpgroups, the
#   cluster barrier split, the producer's first tile fetched, resolved and requested before
#   its wait) with the loop's loads back at the top of each iteration (call 6 put them at the
#   end, ptxas hoisted them above the full_local arrival: 212 vs 191 us).
# Prediction: the first tile's lookup chain under the Q load: 1-2 us a CTA wave, b128 s_q1
#   191 -> 188-190, s_q2 370 -> 364-368.
# (The GPU test files compile every variant first (200 s on a fresh machine) and memcheck
# compiles its portable cases: neither fits this call's budget; hopper_check is the check.)
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/pp session22_pair_prologue2.patch
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair mla_decode_fp8_ds_mla_causal_sparse_fold0_hopper_pair"
warm_kernels . /tmp/pp; say "warm"
(cd /tmp/pp && PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule pair > $OUT/check_pp2.txt 2>&1)
rc=$?; say "check pp2 exit $rc: $(grep -h 'correctness' $OUT/check_pp2.txt)"
if [ $rc -ne 0 ]; then cat "$L"; grep FAIL $OUT/check_pp2.txt | cut -c1-300; exit 1; fi
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128"
ROUNDS=2 BENCH_TIMEOUT=60 compare_rounds pp2 /tmp/pp
cat "$L"
