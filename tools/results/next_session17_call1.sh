#!/usr/bin/env bash
# Prepared in session 16 (CPU-checked; not run).  Run after `COMMIT=<hash> bash tools/gpu_run.sh`
# (the full GPU suite: not run since balanced splits landed).
# (a) tests/test_gpu_dense.py::test_balanced_splits (never finished on a GPU in session 16).
# (b) next_balanced_batch_order.patch: balanced splits without the longest-first ranking
#     (compiles: seesaw 241 registers, ring 222, no spills).  Session 16 measured balanced
#     vs P splits: uniform one-wave rows +3-4% (ds h64 192.4 / 186.3, ds h128 287.1 / 275.4,
#     b32 h128 105.3 / 101.1), ragged -15/-34%.  Prediction: the uniform rows back within 1%
#     of the P splits (no ranking in any CTA: ~1-2 us a CTA), ragged rows unchanged +-2%.
# (c) the checked-mode test at the seed that failed in session 16 (the _finite_cache fix).
# Usage (device, repository root): OUT=$OUT bash tools/results/next_session17_call1.sh
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm"
PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py -k balanced \
  > $OUT/tests.txt 2>&1; say "test_balanced_splits exit $? $(tail -1 $OUT/tests.txt)"
MLA_CUPY_SEED=4710371379438756716 PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_hardening.py -k random_corruptions 2>&1 | tail -1 >> "$L"
rm -rf /tmp/bo && cp -r . /tmp/bo && (cd /tmp/bo && git apply tools/results/next_balanced_batch_order.patch) || say "apply failed"
(cd /tmp/bo && PYTHONPATH=. timeout 120 python3 tools/hopper_check.py --schedule seesaw > $OUT/check_bo.txt 2>&1; \
  PYTHONPATH=. timeout 120 python3 tools/hopper_check.py --schedule ring >> $OUT/check_bo.txt 2>&1); say "checks $(grep -c FAIL $OUT/check_bo.txt) FAIL lines"
C="ds_h64_sq1_ragged ds_h128_sq1_ragged ds_h64_sq1_uniform ds_h128_sq1_uniform b32_h128_s4096"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  echo "== batch order ($r)" >> "$L"; (cd /tmp/bo && PYTHONPATH=. bench); say bench
  echo "== P splits ($r)" >> "$L"; MLA_CUPY_SPLIT=partitions PYTHONPATH=. bench; say bench
done
cat "$L"
