# Session 48, call 7: call 6 with the least device time (~300 s left after refused starts): no
# warm-up of HEAD's cache (its four bench kernels compile on demand); the pipelined tree's cache
# warmed in parallel, its checks, then two rounds of the 32-row rows beside HEAD.
# Run as: OUT=$OUT bash tools/results/session48_call7.sh
. tools/results/device_steps.sh
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
patched_stack /tmp/pipe pipe next_features_pipelined.patch
check_tree /tmp/pipe pipe narrow; rc=$?
(cd /tmp/pipe && GPU_FILE_TIMEOUT=60 gpu_files pipe fp8 sparse)
(cd /tmp/pipe && PYTHONPATH=.:tests timeout 80 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow_schedule_fp8 or far_below" > /tmp/t_dense.log 2>&1; echo "[exit $?]" >> /tmp/t_dense.log)
say "pipe dense -k fp8: $(tail -2 /tmp/t_dense.log | tr '\n' ' ')"; cp /tmp/t_dense.log $OUT/
(cd /tmp/pipe && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/results/rs_memcheck_cases.py 32 48 > /tmp/mc32.log 2>&1)
say "pipe memcheck 32 48 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc32.log | cut -c1-120 | tr '\n' ' ')"
C="fp8_b128_h32_s8192 fp8_ds_mla_b128_h32_s8192 sparse_ds_mla_b128_sq1_h32 sparse_ds_mla_b128_sq2_h16_fold" \
  ROUNDS=2 BENCH_TIMEOUT=90 bench_trees . $([ $rc -eq 0 ] && echo /tmp/pipe)
say done
