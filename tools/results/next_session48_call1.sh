# Session 48, call 1 (H200): dense `fp8` rows copied by TMA column boxes (next_fp8_tma_raw.patch,
# built and checked on the CPU in session 47: every narrow variant compiles, wgmmas pipelined,
# tests/test_rs_fragments.py's model of the new ldmatrix addresses passes), checked, then timed
# beside HEAD.  Predicted: dense fp8 b128 h16 164.5 -> 150-156 us (its copies as the 16-bit
# narrow kernel's TMA boxes, ~4.0 TB/s, instead of 32 bulk copies a tile at 3.75); h32 flat
# to -3% (math-bound); fp8_ds_mla and sparse rows unchanged (SASS identical).
# Run as: OUT=$OUT bash tools/results/next_session48_call1.sh
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/tma tma next_fp8_tma_raw.patch
check_tree /tmp/tma tma narrow; rc=$?
(cd /tmp/tma && GPU_FILE_TIMEOUT=100 gpu_files tma fp8)
(cd /tmp/tma && PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow_schedule_fp8 or far_below or longest_first or schedule_reused" > /tmp/t_dense.log 2>&1; echo "[exit $?]" >> /tmp/t_dense.log)
say "tma dense -k fp8: $(tail -2 /tmp/t_dense.log | tr '\n' ' ')"; cp /tmp/t_dense.log $OUT/
(cd /tmp/tma && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=.:tests timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py -k "narrow_schedule_fp8" --maxfail=1 > /tmp/mc.log 2>&1)
say "tma memcheck exit $?: $(grep -h 'ERROR SUMMARY\|passed\|failed' /tmp/mc.log | tail -2 | tr '\n' ' ')"
if [ $rc -eq 0 ]; then
  C="fp8_b128_h16_s8192 fp8_b128_h32_s8192 fp8_ds_mla_b128_h16_s8192" ROUNDS=2 BENCH_TIMEOUT=150 bench_trees . /tmp/tma
fi
say done
