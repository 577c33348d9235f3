# Session 43, call 2 (after call 1: the 16-row RS stack checked and memchecked; raw_ahead
# won: dense fp8_ds_mla b128 h16 272.5 -> 255.7 (rs) -> 222.2 us (rs + raw_ahead), fp8
# 254.0 -> 251.8 -> 211.8, sparse h16 101.4 -> 80.1 -> 73.1).  One tree with the whole
# stack (math, sparse, raw_ahead, three_groups, m32, cleanup): checked, its dense / fp8 /
# sparse GPU files in parallel with the forced-portable files owed since session 40, 16- and
# 32-row sparse memcheck, then rows beside the 16-row rs + raw_ahead tree, one round (device budget).
# Predicted: three_groups at 16 rows -5 to -20% if the math still bounds (raw_ahead's
# 13-16% says it did), flat if the loads now do; 32-row rows (sparse h32, sparse h16 fold
# s_q 2, dense b128 h32 of both layouts) -20 to -35%.  On a failed check: rs_diagnose at 32
# heads, and the stack without three_groups checked, to say which broke it.
. tools/results/device_steps.sh
begin_call
FULL="next_narrow_rs_math.patch next_narrow_rs_sparse.patch wip_narrow_rs_raw_ahead.patch wip_narrow_rs_three_groups.patch wip_narrow_rs_m32.patch next_narrow_rs_cleanup.patch"
patched_stack /tmp/fin fin $FULL
check_tree /tmp/fin fin narrow; rc=$?
if [ $rc -ne 0 ]; then
  (cd /tmp/fin && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 120 python3 tools/results/rs_diagnose.py \
     --heads 32 >> "$L" 2>&1)
  patched_stack /tmp/no3 no3 next_narrow_rs_math.patch next_narrow_rs_sparse.patch wip_narrow_rs_raw_ahead.patch \
    wip_narrow_rs_m32.patch next_narrow_rs_cleanup.patch
  check_tree /tmp/no3 no3 narrow
  say "fin check failed: stop"; exit 0
fi
(cd /tmp/fin && GPU_FILE_TIMEOUT=230 gpu_files fin dense fp8 sparse) &
PORTABLE_TIMEOUT=230 portable dense sparse fp8
wait
for n in "16 41" "32 42"; do
  (cd /tmp/fin && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 120 compute-sanitizer --tool memcheck \
     --error-exitcode 1 python3 tools/results/rs_memcheck_cases.py $n > /tmp/mc_fin.log 2>&1)
  say "memcheck fin $n exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc_fin.log | cut -c1-120 | tr '\n' ' ')"
done
patched_stack /tmp/rsa rsa next_narrow_rs_math.patch next_narrow_rs_sparse.patch wip_narrow_rs_raw_ahead.patch
C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 sparse_ds_mla_b128_sq1_h16 sparse_ds_mla_b128_sq1_h32 sparse_ds_mla_b128_sq2_h16_fold"
ROUNDS=1 bench_trees /tmp/rsa /tmp/fin
bench_shape_trees "--batch-size 128 --num-heads 32 --cache-len 8192" /tmp/rsa /tmp/fin
say done
