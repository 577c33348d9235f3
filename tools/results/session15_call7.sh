#!/usr/bin/env bash
# Session 15, call 7: the final narrow kernel checked on the GPU.  Its 16-row and fp8 SASS is
# identical to b4bdc6e's, its 32-row SASS identical to call 6's "SHFL before the wait" tree
# (nvdisasm diffs: 0 lines), so call 6's times stand for it; this call checks it.
# Usage (device, repository root): OUT=$OUT bash tools/results/session15_call7.sh
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
PYTHONPATH=. timeout 80 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; say "check exit $?"
grep "correctness\|^FAIL" $OUT/check.txt | head -3 >> "$L"
PYTHONPATH=.:tests timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "narrow or segment_mode or longest_first or independent or batch_invariant" > $OUT/tests.txt 2>&1
say "tests exit $? $(tail -1 $OUT/tests.txt)"
grep -E "FAILED|Error" $OUT/tests.txt | head -5 >> "$L"
cat "$L"
