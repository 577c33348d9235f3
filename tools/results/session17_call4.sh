#!/usr/bin/env bash
# Session 17, call 4 (device, repository root):  OUT=$OUT bash tools/results/session17_call4.sh
# (af) next_seesaw_arrive_first.patch: each warpgroup's exponentials take the row max from
#      shared memory after its arrive (BAR_M0 / BAR_M1), so ptxas can no longer schedule the
#      tile's 32 MUFU above the arrive (it did: SASS, nvcc 13 -ftz, and the H200's own cubin
#      in call 1's hotspots).  Call 1: warpgroup 1 waits at BAR_M0 and warpgroup 0 at BAR_M1
#      for ~450 cycles a pair each.  Prediction: seesaw rows (b128 h128, ds h128, b32 h128,
#      varlen) -2 to -4%; ds h64 (the ring) unchanged.
# Checked first (hopper_check --schedule seesaw), then timed beside HEAD, two rounds; then
# the narrow and segment-mode GPU tests at HEAD (call 3 ran them without a warm cache and
# they timed out compiling).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
rm -rf /tmp/af && cp -r . /tmp/af && (cd /tmp/af && git apply tools/results/next_seesaw_arrive_first.patch) || say "apply failed"
(cd /tmp/af && PYTHONPATH=. timeout 100 python3 tools/hopper_check.py --schedule seesaw > $OUT/check_af.txt 2>&1); say "check af exit $? $(tail -1 $OUT/check_af.txt)"
C="b128_h128_s8192 ds_h128_sq1_uniform ds_h128_sq1_ragged b32_h128_s4096 b128_sq2_h128_varlen_causal ds_h64_sq1_uniform"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. BENCH_TIMEOUT=70 bench; say bench
  echo "== arrive first ($r)" >> "$L"; (cd /tmp/af && PYTHONPATH=. BENCH_TIMEOUT=70 bench); say bench
done
PYTHONPATH=. timeout 70 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm"
PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "narrow or segment_mode" > $OUT/tests.txt 2>&1; say "narrow tests exit $? $(tail -1 $OUT/tests.txt)"
cat "$L"
