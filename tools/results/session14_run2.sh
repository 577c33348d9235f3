#!/usr/bin/env bash
# Session 14, call 2: the 32-row narrow kernel as two math warpgroups of 16 rows (working
# tree) against HEAD (one warpgroup of 32 rows).  Prediction: ds_h32_sq1 ragged ~230 ->
# ~190 us, ds_h16_sq2 ragged likewise (their rows run as two 16-row chains that overlap);
# 16-row cases unchanged (identical SASS).  Correctness first; stops on a failed test.
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
C="ds_h32_sq1_ragged ds_h32_sq1_uniform ds_h16_sq2_ragged ds_h16_sq2_uniform ds_h16_sq1_ragged b128_h16_s8192"
bench() { timeout 100 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"; }
rm -rf /tmp/h && cp -r . /tmp/h && (cd /tmp/h && git apply -R tools/results/session14_pair.patch)  # (the patch: this change, then uncommitted; now commit "Narrow kernel, 32-row tile: two math warpgroups") || say "reverse apply failed"
timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm"
timeout 60 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; say "check exit $?"
grep "correctness\|^FAIL" $OUT/check.txt | head -3 >> "$L"
timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py tests/test_gpu_sparse.py \
  -k "narrow or segment_mode or longest_first or independent" > $OUT/tests.txt 2>&1
say "tests exit $? $(tail -1 $OUT/tests.txt)"
if grep -q "passed" $OUT/tests.txt && ! grep -q "failed\|error" $OUT/tests.txt; then
  for r in 1 2; do
    echo "== new ($r)" >> "$L"; bench; say "bench new"
    echo "== HEAD ($r)" >> "$L"; (cd /tmp/h && bench); say "bench HEAD"
  done
  if [ $((SECONDS-T0)) -lt 420 ]; then
    timeout 100 ncu --kernel-name regex:m32_hopper_narrow --launch-skip 2 --launch-count 1 \
      --section SpeedOfLight --section WarpStateStats --section MemoryWorkloadAnalysis \
      python3 tools/bench.py ds_h32_sq1_ragged --repeats 20 --check-seqs 1 > $OUT/ncu.txt 2>&1; say "ncu exit $?"
  fi
fi
cat "$L"
