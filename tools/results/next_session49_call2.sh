# Session 49, call 2 (ask for the H200; .whl carried; COMMIT=<HEAD>): what session 48 owes.
#   1. The landed 128-byte swizzled TMA boxes (5667f97) beside the tree before them
#      (session48_before_tma.patch), two rounds.  Predicted: fp8 b128 h16 165 -> 153-158 us,
#      h32 flat to -2%.  The sparse GPU file on HEAD (the sparse m32 fp8_ds_mla kernel's SASS
#      moved with that change, register allocation only).
#   2. Every README peer row on the H200 (peer_all_rows; session 48's run was on an H100).
#   3. The forced-portable dense GPU file (owed since session 46), last: it may run out of time.
# Run as: COMMIT=<HEAD> OUT=$OUT bash tools/results/next_session49_call2.sh
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/before before session48_before_tma.patch
C="fp8_b128_h16_s8192 fp8_b128_h32_s8192" ROUNDS=2 BENCH_TIMEOUT=100 bench_trees . /tmp/before
GPU_FILE_TIMEOUT=60 gpu_files head sparse
PEER_TIMEOUT=200 peer_all_rows
PORTABLE_TIMEOUT=150 portable dense
say done
