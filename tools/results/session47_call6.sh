# Session 47, call 6 (H200): the split softmax (landed) beside the tree before on the H200, one
# round: the 32-row rows (dense fp8 / fp8_ds_mla h32, sparse h32, folded s_q 2 h16).  Call 5 ran
# on an H100.  Run as: OUT=$OUT bash tools/results/session47_call6.sh
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/before before session47_before_split_softmax.patch
C="fp8_b128_h32_s8192 fp8_ds_mla_b128_h32_s8192 sparse_ds_mla_b128_sq1_h32 sparse_ds_mla_b128_sq2_h16_fold" \
  ROUNDS=1 BENCH_TIMEOUT=150 bench_trees . /tmp/before
say done
