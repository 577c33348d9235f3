# Prepared in session 42 (never run); after next_rs_call1.sh passed.  ~550 s with a cold start.
# Run as: OUT=$OUT bash tools/results/next_rs_call2.sh
#   1. In parallel: the dense GPU file on the 16-row RS stack (its fp8 cases route there),
#      and the forced-portable dense, sparse and fp8 files on HEAD (owed since session 40;
#      no portable kernel or routing changed since session 39's run).  All pass.
#   2. The 32-row stack (wip_narrow_rs_m32.patch and next_narrow_rs_cleanup.patch on both
#      16-row patches: every narrow fp8 kernel RS, the producer's decode code removed; the
#      cleanup's 16-bit narrow SASS is byte-identical, its fp8 kernels' shared-memory
#      layout 56 bytes shorter): hopper_check narrow, the fp8 and sparse files (the
#      group-scale bound test now at 16 and 32 rows); on a failed check the m32 patch alone
#      is checked too, to say which of the two broke it.  Then memcheck of 32-row sparse
#      cases with garbage indices (h32; h16 folded at s_q 2; both layouts), and the 32-row
#      rows beside the 16-row stack, one round: sparse fp8_ds_mla b128 h32 and h16 folded
#      at s_q 2, dense fp8_ds_mla and fp8 b128 h32.  Predicted: 0 errors; the 32-row rows
#      -20 to -35% (the producer form's per-tile skeleton gone, as at 16 rows).
. tools/results/device_steps.sh
begin_call
STACK="next_narrow_rs_math.patch next_narrow_rs_sparse.patch"
patched_stack /tmp/rs rs $STACK
(cd /tmp/rs && GPU_FILE_TIMEOUT=300 gpu_files rs dense) &
PORTABLE_TIMEOUT=300 portable dense sparse fp8
wait
patched_stack /tmp/m32 m32 $STACK wip_narrow_rs_m32.patch next_narrow_rs_cleanup.patch
check_tree /tmp/m32 m32 narrow; rc=$?
(cd /tmp/m32 && GPU_FILE_TIMEOUT=120 gpu_files m32 fp8 sparse)
if [ $rc -ne 0 ]; then
  (cd /tmp/m32 && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 120 python3 tools/results/rs_diagnose.py \
     --heads 32 >> "$L" 2>&1)
  patched_stack /tmp/m32a m32_alone $STACK wip_narrow_rs_m32.patch
  check_tree /tmp/m32a m32_alone narrow
  say "m32 check failed: stop"; exit 0
fi
(cd /tmp/m32 && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 120 compute-sanitizer --tool memcheck \
   --error-exitcode 1 python3 tools/results/rs_memcheck_cases.py 32 42 > /tmp/mc_m32.log 2>&1)
say "memcheck m32 exit $?: $(grep -h 'ERROR SUMMARY\|PASS\|FAIL\|done' /tmp/mc_m32.log | cut -c1-120 | tr '\n' ' ')"
C="sparse_ds_mla_b128_sq1_h32 sparse_ds_mla_b128_sq2_h16_fold"
ROUNDS=1 bench_trees /tmp/rs /tmp/m32
bench_shape_trees "--batch-size 128 --num-heads 32 --cache-len 8192" /tmp/rs /tmp/m32
say done
