# Session 48, call 1 (asked for the H200): two things.
# (a) Dense `fp8` rows copied by TMA column boxes (next_fp8_tma_raw.patch, CPU-checked in
#     session 47), checked, then two rounds beside HEAD.  Predicted: dense fp8 b128 h16
#     164.5 -> 150-156 us; h32 flat to -3% (math-bound); fp8_ds_mla unchanged (SASS identical).
# (b) The 32-row softmax split by rows (05adf0a, measured only on an H100) beside the tree
#     before it (session48_before_split_softmax.patch: the narrow kernel and render.py as at
#     05adf0a^), two rounds.  Predicted from the H100: fp8 h32 -7%, fp8_ds_mla h32 -8%,
#     sparse h32 -3%, folded s_q 2 h16 -3%.
# Run as: OUT=$OUT bash tools/results/session48_call1.sh
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/tma tma next_fp8_tma_raw.patch
check_tree /tmp/tma tma narrow; rc=$?
(cd /tmp/tma && GPU_FILE_TIMEOUT=100 gpu_files tma fp8)
(cd /tmp/tma && PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow_schedule_fp8 or far_below or longest_first or schedule_reused" > /tmp/t_dense.log 2>&1; echo "[exit $?]" >> /tmp/t_dense.log)
say "tma dense -k fp8: $(tail -2 /tmp/t_dense.log | tr '\n' ' ')"; cp /tmp/t_dense.log $OUT/
if [ $rc -eq 0 ]; then
  C="fp8_b128_h16_s8192 fp8_b128_h32_s8192 fp8_ds_mla_b128_h16_s8192" ROUNDS=2 BENCH_TIMEOUT=150 bench_trees . /tmp/tma
fi
patched_stack /tmp/before before session48_before_split_softmax.patch
C="fp8_b128_h32_s8192 fp8_ds_mla_b128_h32_s8192 sparse_ds_mla_b128_sq1_h32 sparse_ds_mla_b128_sq2_h16_fold" \
  ROUNDS=2 BENCH_TIMEOUT=150 bench_trees . /tmp/before
(cd /tmp/tma && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=.:tests timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py -k "narrow_schedule_fp8" --maxfail=1 > /tmp/mc.log 2>&1)
say "tma memcheck exit $?: $(grep -h 'ERROR SUMMARY\|passed\|failed' /tmp/mc.log | tail -2 | tr '\n' ' ')"
cp /tmp/mc.log $OUT/
say done
