#!/usr/bin/env bash
# Session 18, call 3 (device, repository root):  OUT=$OUT bash tools/results/next_session18_call3.sh
# next_balanced_ragged_even.patch: balanced splits cut a ragged batch (some sequence more
# than 1/16 over the mean keys) into grid y's (2P's) even splits per sequence instead of
# splits of the batch's mean over P.  The mean rule leaves about B/2 more CTAs than one
# wave holds (each sequence rounds up to whole splits): DeepSeek h64 ragged 264 us against
# forced P=4's 210 (session 16).  A makespan model (1 CTA an SM, longest first, per CTA
# 8.8 us + 0.0447 us a key, fitted to h64 uniform P=2 and P=4) gives 282 -> 215 for it.
# Prediction: ds h64 ragged 264 -> 205-220 us; ds h128 ragged 337 -> ~332 (forced P=2's);
# the uniform rows and b32 h128 unchanged (within 1%).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched, compare_rounds
patched /tmp/br next_balanced_ragged_even.patch
(cd /tmp/br && PYTHONPATH=. timeout 200 python3 tools/warm_kernel_cache.py > $OUT/warm.txt 2>&1); say "warm exit $? $(tail -1 $OUT/warm.txt)"
for s in ring seesaw; do
  (cd /tmp/br && PYTHONPATH=. timeout 120 python3 tools/hopper_check.py --schedule $s > $OUT/check_$s.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_$s.txt) &
done
wait; say "check ring: $(tail -2 $OUT/check_ring.txt | tr '\n' ' ') seesaw: $(tail -2 $OUT/check_seesaw.txt | tr '\n' ' ')"
C="ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h128_sq1_ragged ds_h128_sq1_uniform b32_h128_s4096 ds_h64_sq2_ragged"
BENCH_TIMEOUT=150 compare_rounds "ragged even" /tmp/br
(cd /tmp/br && PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "balanced or longest_first" > $OUT/tests.txt 2>&1); say "balanced test exit $? $(tail -1 $OUT/tests.txt)"
cat "$L"
