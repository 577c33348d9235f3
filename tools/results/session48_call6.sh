# Session 48, call 6: call 5 without the tree before the TMA boxes (an H100 was asked for: calls 2-3 timed that on one; ~400 s of device time left).
# starts cost ~375 s).  (b) first: the 32-row features kernels pipelined
# (next_features_pipelined.patch) checked, then (a) and (b) timed in one bench: HEAD, the tree
# before the TMA boxes (session48_before_tma.patch), the pipelined tree.  Predictions as call 4's
# (session48_call4.sh).  The landed tree's sparse file last.
# Run as: OUT=$OUT bash tools/results/session48_call5.sh
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/pipe pipe next_features_pipelined.patch
check_tree /tmp/pipe pipe narrow; rc=$?
(cd /tmp/pipe && GPU_FILE_TIMEOUT=100 gpu_files pipe fp8 sparse)
(cd /tmp/pipe && PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow_schedule_fp8 or far_below" > /tmp/t_dense.log 2>&1; echo "[exit $?]" >> /tmp/t_dense.log)
say "pipe dense -k fp8: $(tail -2 /tmp/t_dense.log | tr '\n' ' ')"; cp /tmp/t_dense.log $OUT/
(cd /tmp/pipe && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/results/rs_memcheck_cases.py 32 48 > /tmp/mc32.log 2>&1)
say "pipe memcheck 32 48 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc32.log | cut -c1-120 | tr '\n' ' ')"
C="fp8_b128_h16_s8192 fp8_b128_h32_s8192 fp8_ds_mla_b128_h32_s8192 sparse_ds_mla_b128_sq1_h32" \
  ROUNDS=2 BENCH_TIMEOUT=150 bench_trees . $([ $rc -eq 0 ] && echo /tmp/pipe)
GPU_FILE_TIMEOUT=60 gpu_files head sparse
say done
