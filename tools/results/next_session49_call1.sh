# Session 49, call 1 (ask for the H200): the 32-row features kernels pipelined, two forms, each
# checked before it is timed, then two rounds beside HEAD.
#   pipe (next_features_pipelined.patch): S^T(j) before O^T(j - 1); tile j's exchange and
#     softmax under O^T(j - 1)'s MMAs; two P^T by tile parity; registers 232 / 40.
#   fb4 (next_features_pipelined_fb4.patch): the same with four fragment buffers in the dense
#     kernels with a rope (all four of O^T(j - 1)'s groups can be in flight under the softmax;
#     sparse spills and D_qk 512 serialises with four, so they keep three).
#   (next_features_pipelined_deep.patch, S^T(j + 1) issued ahead at two fragment buffers, is
#     kept but not run: by the count below it cannot beat pipe.)
# Predicted (H200, HEAD from session 48's call 1: fp8 h32 243.4, fp8_ds_mla h32 258.4, sparse
# h32 82.7, folded s_q 2 h16 82.0 us): pipe 220-235 / 235-250 / 78-81 / 78-81 (what can hide
# under the softmax is the O^T groups still in flight after its last step's issue, at most
# FRAG_BUFS = 3 of its VC_WG = 4 groups a warpgroup, ~384 of the ~1050 clocks a tile of exchange
# and softmax); deep no better than pipe (with two fragment buffers only one or two of S^T(j + 1)'s
# groups are in flight by then, and the third buffer's 2.5-3% is gone); fb4 the dense rows a
# further 3-5% below pipe (~512 of the ~1050 clocks hidden), sparse as pipe.  The 16-row
# kernels' SASS is byte-identical in all.
# Run as: OUT=$OUT bash tools/results/next_session49_call1.sh
. tools/results/device_steps.sh
begin_call
for t in pipe fb4; do
  p=next_features_pipelined.patch; [ $t = fb4 ] && p=next_features_pipelined_fb4.patch
  patched_stack /tmp/$t $t $p
  check_tree /tmp/$t $t narrow; eval "rc_$t=\$?"
  (cd /tmp/$t && GPU_FILE_TIMEOUT=80 gpu_files $t fp8 sparse)
  (cd /tmp/$t && PYTHONPATH=.:tests timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
     -k "narrow_schedule_fp8 or far_below" > /tmp/t_dense_$t.log 2>&1; echo "[exit $?]" >> /tmp/t_dense_$t.log)
  say "$t dense -k fp8: $(tail -2 /tmp/t_dense_$t.log | tr '\n' ' ')"; cp /tmp/t_dense_$t.log $OUT/
  (cd /tmp/$t && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 80 compute-sanitizer --tool memcheck --error-exitcode 1 \
     python3 tools/results/rs_memcheck_cases.py 32 49 > /tmp/mc_$t.log 2>&1)
  say "$t memcheck 32 49 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc_$t.log | cut -c1-120 | tr '\n' ' ')"
done
C="fp8_b128_h32_s8192 fp8_ds_mla_b128_h32_s8192 sparse_ds_mla_b128_sq1_h32 sparse_ds_mla_b128_sq2_h16_fold" \
  ROUNDS=2 BENCH_TIMEOUT=120 bench_trees . $([ $rc_pipe -eq 0 ] && echo /tmp/pipe) $([ $rc_fb4 -eq 0 ] && echo /tmp/fb4)
say done
