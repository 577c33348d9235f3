#!/usr/bin/env bash
# Prepared in session 18 (not run).  Device, repository root, after call 1:
#   OUT=$OUT VARIANT=all bash tools/results/next_session19_call2.sh
# The GPU tests of the patches (test_seesaw_segment_mode, test_balanced_splits,
# test_longest_first_runs_every_sequence_once, test_warp_row_combine_is_the_one_group_combine_bit_for_bit)
# on the tree call 1 chose to land (VARIANT: sg, cw or all; each patch's tests are in it),
# after a warm kernel cache, then the whole dense and hardening files there.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, patched
V=${VARIANT:-all}
case $V in
  sg) patched /tmp/t next_seesaw_segments.patch ;;
  cw) patched /tmp/t next_combine_warp_rows.patch ;;
  all) patched /tmp/t next_seesaw_segments.patch && (cd /tmp/t && git apply tools/results/next_seesaw_p_shared.patch \
         && git apply tools/results/next_seesaw_page_div.patch \
         && git apply tools/results/next_combine_warp_rows_after_segments.patch) || say "apply all failed" ;;
esac
cd /tmp/t
PYTHONPATH=. timeout 200 python3 tools/warm_kernel_cache.py > $OUT/warm.txt 2>&1; say "warm: $(tail -1 $OUT/warm.txt)"
PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "seesaw_segment or balanced or longest_first or warp_row" > $OUT/tests_new.txt 2>&1
say "new tests: $(tail -1 $OUT/tests_new.txt)"
for f in dense hardening; do
  (PYTHONPATH=.:tests timeout 230 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_$f.py \
     > $OUT/tests_$f.txt 2>&1; echo "[exit $?]" >> $OUT/tests_$f.txt) &
done
wait
for f in dense hardening; do say "$f: $(tail -2 $OUT/tests_$f.txt | tr '\n' ' ')"; done
# the forced portable path (session 18's cta_split and split_keys' split argument changed
# sources the portable kernels include; not yet run on a GPU)
MLA_CUPY_BACKEND=portable PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_gpu_dense.py -k "balanced or segment or longest_first" > $OUT/tests_portable.txt 2>&1
say "portable: $(tail -1 $OUT/tests_portable.txt)"
cat "$L"
