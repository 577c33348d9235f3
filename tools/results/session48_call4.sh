# Session 48, call 4 (asked for the H200): two things, each checked before it is timed.
# (a) The landed 128-byte swizzled TMA boxes for dense `fp8` rows (5667f97) beside the tree
#     before them (session48_before_tma.patch = 8b848ad's kernels).  Predicted (H200): fp8
#     b128 h16 165 -> 153-158 us, h32 flat to -2%.  (Calls 2-3 ran on an H100: 220.1 -> 216.3.)
#     The sparse file on the landed tree (the sparse m32 fp8_ds_mla kernel's SASS moved with
#     it: register allocation only).
# (b) The 32-row features kernels pipelined (next_features_pipelined.patch): S^T(j) issued
#     before O^T(j - 1), so the exchange and softmax of tile j run while O^T(j - 1)'s MMAs are
#     in flight; two P^T buffers by tile parity; O^T rescaled after they retire.  Checked
#     (hopper_check narrow, fp8 and sparse files, dense fp8 tests, 32-row memcheck), then
#     timed.  Predicted (H200): fp8 h32 243 -> 215-225 us, fp8_ds_mla h32 258 -> 230-240,
#     sparse h32 82.7 and folded s_q 2 h16 82 -> 76-80; the 16-row rows unchanged (SASS
#     byte-identical).
# Run as: OUT=$OUT bash tools/results/session48_call4.sh
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=100 gpu_files head sparse
patched_stack /tmp/pipe pipe next_features_pipelined.patch
check_tree /tmp/pipe pipe narrow; rc=$?
(cd /tmp/pipe && GPU_FILE_TIMEOUT=100 gpu_files pipe fp8 sparse)
(cd /tmp/pipe && PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow_schedule_fp8 or far_below or longest_first or schedule_reused" > /tmp/t_dense.log 2>&1; echo "[exit $?]" >> /tmp/t_dense.log)
say "pipe dense -k fp8: $(tail -2 /tmp/t_dense.log | tr '\n' ' ')"; cp /tmp/t_dense.log $OUT/
(cd /tmp/pipe && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/results/rs_memcheck_cases.py 32 48 > /tmp/mc32.log 2>&1)
say "pipe memcheck 32 48 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc32.log | cut -c1-120 | tr '\n' ' ')"
patched_stack /tmp/before before session48_before_tma.patch
C="fp8_b128_h16_s8192 fp8_b128_h32_s8192 fp8_ds_mla_b128_h32_s8192 sparse_ds_mla_b128_sq1_h32 sparse_ds_mla_b128_sq2_h16_fold" \
  ROUNDS=2 BENCH_TIMEOUT=150 bench_trees . /tmp/before $([ $rc -eq 0 ] && echo /tmp/pipe)
say done
