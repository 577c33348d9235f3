# Session 47, call 5 (H200): the 32-row features kernels with the softmax's rows split between
# the two math warpgroups (each the softmax of its 16 rows, P^T and the factors through shared
# memory; render.narrow_features), checked, then one round beside the tree before
# (session47_before_split_softmax.patch).  Predicted (call 1's ablations: the lockstep softmax of
# all 32 rows cost 86 of 268 us): dense fp8 b128 h32 263 -> 215-235 us, fp8_ds_mla 288 -> 235-255,
# sparse fp8_ds_mla h32 and folded s_q 2 h16 91 -> 80-86.
# Run as: OUT=$OUT bash tools/results/session47_call5.sh
. tools/results/device_steps.sh
begin_call
check_tree . head narrow; rc=$?
GPU_FILE_TIMEOUT=100 gpu_files head fp8 sparse
(PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow_schedule_fp8 or longest_first or schedule_reused or far_below" > /tmp/t_dense.log 2>&1; echo "[exit $?]" >> /tmp/t_dense.log)
say "dense -k fp8/far_below: $(tail -2 /tmp/t_dense.log | tr '\n' ' ')"; cp /tmp/t_dense.log $OUT/
(MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/results/rs_memcheck_cases.py 32 97 > /tmp/mc32.log 2>&1)
say "memcheck 32 97 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc32.log | cut -c1-120 | tr '\n' ' ')"
patched_stack /tmp/before before session47_before_split_softmax.patch
if [ $rc -eq 0 ]; then
  C="fp8_b128_h32_s8192 fp8_ds_mla_b128_h32_s8192 sparse_ds_mla_b128_sq1_h32" \
    ROUNDS=1 BENCH_TIMEOUT=150 bench_trees . /tmp/before
fi
say done
