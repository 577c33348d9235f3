#!/usr/bin/env bash
# Session 19, call 2 (device, repository root):  OUT=$OUT bash tools/results/session19_call2.sh
# HEAD = PageDiv in the ring, seesaw and narrow loaders + the _warp_rows combine.
#  1. correctness: hopper_check ring and narrow (PageDiv there has not run), combine_check,
#     the full GPU suite with the sanitizer sweep (tools/gpu_run.sh, HOST=0: it holds
#     test_warp_row_combine_is_the_one_group_combine_bit_for_bit).
#  2. (before the suite) two rounds, 8541a25 (session19_back_to_8541a25.patch) beside HEAD.
# Predictions: seesaw rows (h128) -7 to -10% as call 1's pd; ring rows (ds h64, fp8 h128)
# 0 to -5% (warp 0 of the ring also sits between its warpgroup's wgmmas); narrow rows
# (h16, h32; a dedicated loader warp) within 1%; combine -4 to -10 us on b32 h128, ds h128
# ragged, ds h32 ragged; b8 h16 unchanged (P = 16, the CTA-row kernel, SASS identical).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched
patched /tmp/old session19_back_to_8541a25.patch
K="mla_decode_bf16_causal_dense_fold0_hopper_seesaw mla_decode_bf16_causal_dense_fold0_hopper
   mla_decode_bf16_causal_dense_fold0_m16_hopper_narrow mla_decode_bf16_causal_dense_fold0_m32_hopper_narrow
   mla_decode_fp8_causal_dense_fold0_hopper mla_combine_bf16 mla_combine_bf16_warp_rows"
for d in . /tmp/old; do
  for k in $K; do
    (cd $d && PYTHONPATH=. timeout 200 python3 -c "from mla_cupy.compiler import get_kernel; get_kernel('$k')" \
      > /dev/null 2>&1 || echo "warm $d $k failed" >> "$L") &
  done
done
for s in ring narrow; do
  (PYTHONPATH=. timeout 240 python3 tools/hopper_check.py --schedule $s > $OUT/check_$s.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_$s.txt) &
done
(PYTHONPATH=.:tests timeout 150 python3 tools/combine_check.py > /tmp/combine.txt 2>&1; echo "[exit $?]" >> /tmp/combine.txt) &
wait
say "checks: ring $(grep -h 'correctness\|CRASH' $OUT/check_ring.txt | tr '\n' ' ') narrow $(grep -h 'correctness\|CRASH' $OUT/check_narrow.txt | tr '\n' ' ') combine $(tail -2 /tmp/combine.txt | tr '\n' ' ')"
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096 b128_sq2_h128_varlen_causal
   ds_h64_sq1_ragged ds_h64_sq1_uniform fp8_b128_h128_s8192 ds_h32_sq1_ragged ds_h16_sq1_uniform b8_h16_s8192
   b128_h16_s8192 b1_h128_s65536"
C=$(echo $C)
ROUNDS=2 BENCH_TIMEOUT=150 compare_rounds old /tmp/old
HOST=0 TEST_TIMEOUT=230 SANITIZE_TIMEOUT=230 COMMIT=$(cat .git-commit 2>/dev/null || echo HEAD) OUT=/tmp/gr \
  bash tools/gpu_run.sh > /tmp/gpu_run.txt 2>&1
say "gpu_run exit $?"
cp /tmp/gr/tests.log $OUT/tests.log 2>/dev/null; tail -30 /tmp/gr/sanitize.log > $OUT/sanitize_tail.txt 2>/dev/null
cat "$L"; cat $OUT/tests.log | head -20
