#!/usr/bin/env bash
# Session 15, call 2.  Call 1's bisect put the 32-row regression between 6a8b09d
# (176.6 us, h=32 uniform) and 422279c (208.4), at the same SM clock (1980 MHz): the
# commit that made the narrow epilogue store O from the accumulators, 4 bytes a lane.
# The working tree stages O through the warpgroup's Q rows again (16-byte stores, a
# warp a row).  Prediction: h=32 uniform 195 -> ~177 us, h=32 ragged 216 -> ~200,
# 16-row rows unchanged or 1-2 us better.  Then the turns patch on top of it.
# Usage (device, repository root): OUT=$OUT bash tools/results/session15_call2.sh
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
C="ds_h32_sq1_uniform ds_h32_sq1_ragged ds_h16_sq2_ragged ds_h16_sq1_uniform ds_h16_sq1_ragged b8_h16_s8192"
bench() { timeout 100 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"; }
ROOT=$PWD
rm -rf /tmp/base /tmp/turns
cp -r . /tmp/base && (cd /tmp/base && git apply -R tools/results/next_stage_epilogue.patch) || say "base: apply -R failed"
cp -r . /tmp/turns && (cd /tmp/turns && git apply tools/results/next_narrow_turns.patch) || say "turns: apply failed"
timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm staged"
timeout 60 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; say "check staged exit $?"
grep "correctness\|^FAIL" $OUT/check.txt | head -3 >> "$L"
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_fp8.py tests/test_gpu_dense.py \
  -k "narrow or segment_mode or longest_first or independent or batch_invariant or fp8" > $OUT/tests.txt 2>&1
say "tests staged exit $? $(tail -1 $OUT/tests.txt)"
(cd /tmp/turns && timeout 60 python3 tools/hopper_check.py --schedule narrow > $OUT/check_turns.txt 2>&1); say "check turns exit $?"
grep "correctness\|^FAIL" $OUT/check_turns.txt | head -3 >> "$L"
for r in 1 2; do
  echo "== staged ($r)" >> "$L"; bench; say "bench staged"
  echo "== HEAD ($r)" >> "$L"; (cd /tmp/base && bench); say "bench HEAD"
  echo "== staged+turns ($r)" >> "$L"; (cd /tmp/turns && bench); say "bench turns"
done
cat "$L"
