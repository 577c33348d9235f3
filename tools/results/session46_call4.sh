# Session 46, call 4 (H200): the landed features split (216683a) checked on the H200 and timed
# beside the tree before it (session46_before_features.patch reverses its kernels and
# dispatcher), one round (the device budget: ~490 s left).  Call 3 ran on an H100.
# Run as: OUT=$OUT bash tools/results/session46_call4.sh
. tools/results/device_steps.sh
begin_call
check_tree . head narrow; rc=$?
GPU_FILE_TIMEOUT=90 gpu_files head sparse fp8
(MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/results/rs_memcheck_cases.py 32 71 > /tmp/mc32.log 2>&1)
say "head memcheck 32 71 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc32.log | cut -c1-120 | tr '\n' ' ')"
patched_stack /tmp/old old session46_before_features.patch
if [ $rc -eq 0 ]; then
  LAYOUTS="fp8 fp8_ds_mla" bench_shape_trees "--batch-size 128 --num-heads 32 --q-len 1 --cache-len 8192 --mask causal" . /tmp/old
  C="sparse_ds_mla_b128_sq1_h32 sparse_ds_mla_b128_sq2_h16_fold" ROUNDS=1 bench_trees . /tmp/old
fi
say done
