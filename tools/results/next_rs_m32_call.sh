# Prepared in session 41 (never run): the RS math at 32 rows (wip_narrow_rs_m32.patch on top of
# next_narrow_rs_math.patch and next_narrow_rs_sparse.patch): two math warpgroups of 16 rows on
# the same raw tiles, setmaxnreg 232 / 40.  hopper_check narrow, the fp8 and sparse GPU files,
# then the 32-row rows beside HEAD (~550 s).  Run once the 16-row patches landed, as:
# OUT=$OUT bash tools/results/next_rs_m32_call.sh   (edit the patch list if they have)
. tools/results/device_steps.sh
begin_call
patched /tmp/rs next_narrow_rs_math.patch
(cd /tmp/rs && git apply tools/results/next_narrow_rs_sparse.patch && git apply tools/results/wip_narrow_rs_m32.patch) \
  || say "apply failed"
(cd /tmp/rs && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_rs.txt 2>&1)
say "warm rs: $(head -1 /tmp/warm_rs.txt)"
check_tree /tmp/rs rs narrow
(cd /tmp/rs && GPU_FILE_TIMEOUT=150 gpu_files rs fp8 sparse)
C="sparse_ds_mla_b128_sq1_h32 sparse_ds_mla_b128_sq2_h16_fold"
bench_trees . /tmp/rs
bench_shape_trees "--batch-size 128 --num-heads 32 --cache-len 8192" . /tmp/rs
say done
