# Session 47, call 3 (H200): call 2 found the seesaw's first factors NaN too (h 64 and 128, with
# every score near -120, in both trees): its scale0, scale1 and warpgroup 1's product guarded
# as the narrow kernel's now is (1 where nothing was accumulated).
#   0. test_every_score_far_below_zero (dense, fp8) on HEAD: predicted all 6 pass
#   1. hopper_check seesaw; the dense file's seesaw and narrow tests; the fp8 file
#   2. one round beside the unfixed tree (both fixes reversed), predicted flat: the seesaw rows
#      b128 h128, b32 h128, DeepSeek h128 uniform, and dense fp8 h32 again
# Run as: OUT=$OUT bash tools/results/session47_call3.sh
. tools/results/device_steps.sh
begin_call
(PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider \
   tests/test_gpu_dense.py tests/test_gpu_fp8.py -k far_below_zero > /tmp/far.log 2>&1; echo "[exit $?]" >> /tmp/far.log)
say "far_below_zero: $(grep -h 'passed\|failed\|exit' /tmp/far.log | tail -3 | tr '\n' ' ')"
grep "^FAILED" /tmp/far.log | cut -c1-160 >> "$L"; cp /tmp/far.log "$OUT/far.log"
check_tree . seesaw seesaw; rc=$?
(PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "seesaw or running_max or hopper_schedules or multicast or segments" > /tmp/t_dense_s.log 2>&1; echo "[exit $?]" >> /tmp/t_dense_s.log)
say "dense -k seesaw: $(tail -2 /tmp/t_dense_s.log | tr '\n' ' ')"; cp /tmp/t_dense_s.log $OUT/
GPU_FILE_TIMEOUT=100 gpu_files head fp8
patched_stack /tmp/unfixed unfixed session47_unfixed_alpha.patch
if [ $rc -eq 0 ]; then
  C="b128_h128_s8192 b32_h128_s4096 ds_h128_sq1_uniform fp8_b128_h32_s8192" ROUNDS=1 BENCH_TIMEOUT=150 bench_trees . /tmp/unfixed
fi
say done
