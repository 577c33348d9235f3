# Session 47, call 2 (H200): the narrow kernel's first rescale factor, exp2(0 - max), inf once a
# row's first running max lies below -128 (log2 units): 0 x inf = NaN in O^T and l.
#   0. the new tests (tests/test_gpu_dense.py and test_gpu_fp8.py: test_every_score_far_below_zero)
#      on the tree without the fix (session47_unfixed_alpha.patch): predicted to fail for the
#      narrow rows (dense bf16 h16, fp8_ds_mla h16 and h32), pass for the ring and seesaw rows
#   1. the fixed tree (HEAD): the new tests pass; hopper_check narrow; the fp8 and sparse files;
#      the dense file's narrow tests; memcheck of the 32-row garbage-index cases
#   2. one round beside the unfixed tree, predicted flat (one select a row a tile): dense bf16
#      b128 h16, fp8 h16 and h32, sparse h16 and h32
# Run as: OUT=$OUT bash tools/results/session47_call2.sh
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/unfixed unfixed session47_unfixed_alpha.patch
for t in . /tmp/unfixed; do
  (cd $t && PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider \
     tests/test_gpu_dense.py tests/test_gpu_fp8.py -k far_below_zero > /tmp/far.log 2>&1; echo "[exit $?]" >> /tmp/far.log)
  say "far_below_zero $t: $(grep -h 'passed\|failed\|exit' /tmp/far.log | tail -3 | tr '\n' ' ')"
  grep "^FAILED" /tmp/far.log | cut -c1-160 >> "$L"; cp /tmp/far.log "$OUT/far_$(basename $t).log"
done
check_tree . head narrow; rc=$?
GPU_FILE_TIMEOUT=100 gpu_files head fp8 sparse
(PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow or running_max or longest_first or schedule_reused" > /tmp/t_dense_n.log 2>&1; echo "[exit $?]" >> /tmp/t_dense_n.log)
say "dense -k narrow: $(tail -2 /tmp/t_dense_n.log | tr '\n' ' ')"; cp /tmp/t_dense_n.log $OUT/
(MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/results/rs_memcheck_cases.py 32 83 > /tmp/mc32.log 2>&1)
say "memcheck 32 83 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc32.log | cut -c1-120 | tr '\n' ' ')"
if [ $rc -eq 0 ]; then
  C="b128_h16_s8192 fp8_b128_h16_s8192 fp8_b128_h32_s8192 fp8_ds_mla_b128_h32_s8192 sparse_ds_mla_b128_sq1_h16 sparse_ds_mla_b128_sq1_h32" \
    ROUNDS=1 BENCH_TIMEOUT=150 bench_trees . /tmp/unfixed
fi
say done
