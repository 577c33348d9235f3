# Session 48, call 4 (asked for the H200): the landed 128-byte swizzled TMA boxes for dense `fp8`
# rows (5667f97) beside the tree before them (session48_before_tma.patch = 8b848ad's kernels),
# two rounds; then the sparse GPU file and the 32-row memcheck on the landed tree (the sparse
# m32 fp8_ds_mla kernel's SASS moved with this change: register allocation only, no code of
# its own changed).  Predicted (H200): fp8 b128 h16 165 -> 153-158 us, h32 flat to -2%,
# fp8_ds_mla h16 and sparse h32 flat.  (Calls 2 and 3 ran on an H100: 220.1 -> 216.3.)
# Run as: OUT=$OUT bash tools/results/session48_call4.sh
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/before before session48_before_tma.patch
C="fp8_b128_h16_s8192 fp8_b128_h32_s8192 fp8_ds_mla_b128_h16_s8192 sparse_ds_mla_b128_sq1_h32" \
  ROUNDS=2 BENCH_TIMEOUT=150 bench_trees . /tmp/before
GPU_FILE_TIMEOUT=100 gpu_files head sparse
(MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/results/rs_memcheck_cases.py 32 48 > /tmp/mc32.log 2>&1)
say "memcheck 32 48 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc32.log | cut -c1-120 | tr '\n' ' ')"
say done
