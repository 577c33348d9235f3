# Session 48, call 8 (asked for the H200, ~300 s of device time left after loans resumed): the
# landed 128-byte swizzled TMA boxes (5667f97) on the H200.  hopper_check narrow, the fp8 and
# sparse GPU files on HEAD, then two rounds beside the tree before them
# (session48_before_tma.patch).  Predicted: fp8 b128 h16 165 -> 153-158 us, h32 flat to -2%.
# Run as: OUT=$OUT bash tools/results/session48_call8.sh
. tools/results/device_steps.sh
begin_call
check_tree . head narrow
GPU_FILE_TIMEOUT=60 gpu_files head fp8 sparse
patched_stack /tmp/before before session48_before_tma.patch
C="fp8_b128_h16_s8192 fp8_b128_h32_s8192" ROUNDS=2 BENCH_TIMEOUT=60 bench_trees . /tmp/before
say done
