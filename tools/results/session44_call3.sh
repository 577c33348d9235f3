# Session 44, calls 3-4 (call 4: fp8's raw ring kept even): two math warpgroups on alternate tiles in the 16-row RS kernels
# (wip_narrow_alternate.patch: the working tree, uncommitted), checked, then timed beside HEAD
# (/tmp/head: the tree with the patch reversed).  ~350 s warm.
# Run as: OUT=$OUT bash tools/results/session44_call3.sh
#   0. the patched tree: hopper_check narrow; the fp8 and sparse GPU files; the dense file's
#      fp8 tests; memcheck of hopper_check's RS cases 32 and 28 and of the 16-row sparse
#      garbage-index cases.  A failed check stops the call.
#   1. one round, HEAD / alt: dense fp8_ds_mla and fp8 b128 h16 s8192 (predicted 222.7 ->
#      175-190 and 212.0 -> 165-180: the ceiling's loads-alone floor is 170 / 163), sparse
#      fp8_ds_mla b128 h16 (73.4 -> 65-70: nomath 66.1), h32 (control: unchanged, 32 rows);
#      a second round on both; then b8 h16 s8192 of both layouts (a few tiles a split: the
#      merge's cost shows, if anywhere, there).
#   2. the alt tree's ceiling (nomath: the copies alone; nocopy: the math alone), dense b128 h16.
. tools/results/device_steps.sh
begin_call
rm -rf /tmp/alt /tmp/head && ln -s "$PWD" /tmp/alt && cp -r . /tmp/head
(cd /tmp/head && git apply -R tools/results/wip_narrow_alternate.patch) || say "reverse apply failed"
(cd /tmp/head && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_head.txt 2>&1)
say "warm head: $(head -1 /tmp/warm_head.txt)"
check_tree /tmp/alt alt narrow; rc=$?
(cd /tmp/alt && GPU_FILE_TIMEOUT=90 gpu_files alt fp8 sparse)
(cd /tmp/alt && PYTHONPATH=.:tests timeout 70 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow_schedule_fp8 or longest_first or schedule_reused" > /tmp/t_dense_fp8.log 2>&1; echo "[exit $?]" >> /tmp/t_dense_fp8.log)
say "alt dense -k fp8: $(tail -2 /tmp/t_dense_fp8.log | tr '\n' ' ')"
[ $rc -eq 0 ] || { say "check failed: stop"; exit 0; }
for c in 32 28; do
  (cd /tmp/alt && PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
     python3 tools/hopper_check.py --schedule narrow --case $c > /tmp/mc_$c.log 2>&1)
  say "memcheck case $c exit $?: $(grep -h 'ERROR SUMMARY\|PASS\|FAIL' /tmp/mc_$c.log | cut -c1-150 | tr '\n' ' ')"
done
(cd /tmp/alt && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck \
   --error-exitcode 1 python3 tools/results/rs_memcheck_cases.py 16 44 > /tmp/mc_sparse.log 2>&1)
say "memcheck sparse 16 44 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc_sparse.log | cut -c1-120 | tr '\n' ' ')"
C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 sparse_ds_mla_b128_sq1_h16 sparse_ds_mla_b128_sq1_h32"
ROUNDS=2 bench_trees /tmp/head .
bench_shape_trees "--batch-size 8 --num-heads 16 --cache-len 8192" /tmp/head .
PYTHONPATH=.:tests timeout 150 python3 tools/producer_ceiling.py fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 \
  --keep-mma --ablate nomath,nocopy > "$OUT/ceiling_alt.txt" 2>&1
say "alt ceiling exit $?"
grep -v "^#" "$OUT/ceiling_alt.txt" | cut -c1-160 >> "$L"
say done
