# Prepared in session 42 (no device was lent in sessions 41-42; never run).  Replaces
# session 41's next_session42_call{1,4}.sh: the dense and the sparse RS patches are checked
# together, stacked in one tree (the dense RS kernels' SASS is byte-identical with and
# without the sparse patch, nvcc 13, four variants compared in session 42, and the sparse
# patch leaves dense routing as it is), so the kernel cache is warmed and hopper_check run
# once.  ~520 s with a cold start.  Run as: OUT=$OUT bash tools/results/next_rs_call1.sh
#   1. hopper_check --schedule narrow, the fp8 and sparse GPU files (both RS);
#   2. memcheck: hopper_check's dense RS cases (32, 28, 33, 31) and forced-narrow sparse
#      cases with garbage indices (16 rows: h16 unfolded, h8 folded at s_q 2; both layouts);
#   3. rows, HEAD / the stack / the stack with wip_narrow_rs_raw_ahead.patch (each step's
#      ldmatrix issued a step ahead of its conversion: ptxas then interleaves the next step's
#      loads, PRMTs and conversions with the current step's HGMMAs; SASS checked on the CPU),
#      one round of fp8_ds_mla and fp8 dense b128 h16 (predicted 272 -> 180-215 and
#      257 -> 165-200 us), bf16 b128 h16 (unchanged), sparse fp8_ds_mla b128 h16 (101 ->
#      65-85) and h32 (the control: unchanged); a second round of the three fp8 h16 rows on
#      the two RS trees.  raw_ahead: -5 to -15% where the RS math bounds a row (the ~30
#      cycles of each of 17 steps' ldmatrix no longer exposed), flat where the loads do.
# A failed check stops the call after the GPU files and tools/results/rs_diagnose.py (which
# map is wrong: S^T's K order, O^T's columns, or neither).
. tools/results/device_steps.sh
begin_call
STACK="next_narrow_rs_math.patch next_narrow_rs_sparse.patch"
patched_stack /tmp/rs rs $STACK
check_tree /tmp/rs rs narrow; rc=$?
(cd /tmp/rs && GPU_FILE_TIMEOUT=120 gpu_files rs fp8 sparse)
if [ $rc -ne 0 ]; then   # where it goes wrong (S^T's K order, O^T's columns, or neither)
  (cd /tmp/rs && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 120 python3 tools/results/rs_diagnose.py >> "$L" 2>&1)
  say "check failed: stop"; exit 0
fi
patched_stack /tmp/rsa rsa $STACK wip_narrow_rs_raw_ahead.patch
RSA=/tmp/rsa
check_tree /tmp/rsa rsa narrow || { say "rsa check failed: rows without it"; RSA=; }
for c in 32 28 33 31; do
  (cd /tmp/rs && PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
     python3 tools/hopper_check.py --schedule narrow --case $c > /tmp/mc_$c.log 2>&1)
  say "memcheck case $c exit $?: $(grep -h 'ERROR SUMMARY\|PASS\|FAIL' /tmp/mc_$c.log | cut -c1-150 | tr '\n' ' ')"
done
(cd /tmp/rs && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 150 compute-sanitizer --tool memcheck \
   --error-exitcode 1 python3 tools/results/rs_memcheck_cases.py 16 41 > /tmp/mc_sparse_rs.log 2>&1)
say "memcheck sparse rs exit $?: $(grep -h 'ERROR SUMMARY\|PASS\|FAIL\|done' /tmp/mc_sparse_rs.log | cut -c1-120 | tr '\n' ' ')"
C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 b128_h16_s8192 sparse_ds_mla_b128_sq1_h16 sparse_ds_mla_b128_sq1_h32"
ROUNDS=1 bench_trees . /tmp/rs $RSA
C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 sparse_ds_mla_b128_sq1_h16"
ROUNDS=1 bench_trees /tmp/rs $RSA
say done
