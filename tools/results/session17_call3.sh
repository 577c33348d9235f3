#!/usr/bin/env bash
# Session 17, call 3 (device, repository root):  OUT=$OUT bash tools/results/session17_call3.sh
# Call 2's seesaw benches again, without the varlen row (call 2 misnamed it, so every one of
# them was refused); both patches were checked in call 2 (hopper_check 0 failures).
# (p1) next_seesaw_p1_late.patch: predicted b128 h128 -3 to -6%, the other seesaw rows alike.
# (bo) next_balanced_batch_order.patch: uniform one-wave rows back within 1% of the P splits
#      (ds h64 / h128 uniform, b32 h128), ragged rows unchanged +-2%.
# Then the narrow and segment-mode GPU tests on HEAD (the first-slot change, dc61e0f).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
for v in p1:next_seesaw_p1_late bo:next_balanced_batch_order; do
  d=/tmp/${v%%:*}; rm -rf $d && cp -r . $d && (cd $d && git apply tools/results/${v#*:}.patch) || say "apply $v failed"
done
C="b128_h128_s8192 ds_h128_sq1_uniform ds_h128_sq1_ragged ds_h64_sq1_uniform ds_h64_sq1_ragged b32_h128_s4096"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  echo "== p1 late ($r)" >> "$L"; (cd /tmp/p1 && PYTHONPATH=. bench); say bench
  echo "== batch order ($r)" >> "$L"; (cd /tmp/bo && PYTHONPATH=. bench); say bench
done
PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "narrow or segment_mode" > $OUT/tests.txt 2>&1; say "narrow tests exit $? $(tail -1 $OUT/tests.txt)"
cat "$L"
