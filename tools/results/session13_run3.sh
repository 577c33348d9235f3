#!/usr/bin/env bash
# Session 13, call 3 (device, repository root): every GPU test file and the sanitizer's
# quick sweep at this tree (tools/gpu_run.sh, no host-cost profile), then the portable
# kernels forced over the dense, fp8 and sparse GPU tests.
# Usage: COMMIT=<commit> OUT=$OUT bash tools/results/session13_run3.sh  (timeout 600)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
HOST=0 TEST_TIMEOUT=330 SANITIZE_TIMEOUT=330 bash tools/gpu_run.sh > $OUT/run.txt 2>&1
echo "[gpu_run exit $?]" >> $OUT/run.txt
( for f in dense fp8 sparse; do
    MLA_CUPY_BACKEND=portable timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
      tests/test_gpu_$f.py > $OUT/portable_$f.txt 2>&1 &
  done; wait )
for f in dense fp8 sparse; do echo "== portable $f: $(tail -1 $OUT/portable_$f.txt)"; done | tee $OUT/portable.txt
rm -f $OUT/portable_*.txt
grep -v "^$" $OUT/run.txt | head -40
