#!/usr/bin/env bash
# Session 33, call 5 (device, repository root):  OUT=$OUT bash tools/results/session33_call5.sh
# Call 4's probe (segments, DeepSeek h64 ragged): a boundary costs ~6.7 us, and shares of
# one, two and three segments end at 168, 176 and 189-197 us: the equal cut gives every
# share the same tiles whatever its segments.  Now the ring's equal cut weighs a
# sequence's start as 3 units (sequence_shares<3>, a unit ~2.8 us); windows keep the
# splits (render.ring_segments: no register for the segment state).
# 1. The whole dense GPU file (the ring's segment test among them; the split path's
#    one-split flag moved).  Prediction: all pass.
# 2. Two rounds, auto (balanced splits) against segments.  Prediction: segments' ragged
#    rows end within ~5 us of each other: h64 ragged ~205 -> ~188 (auto ~202), h32 / h16
#    s_q2 ragged ~193 -> ~180; uniform rows equal (the aligned cut).
# 3. The probe on h64 ragged, segments.  Prediction: CTA ends max - min < 10 us.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  > $OUT/dense_all.log 2>&1
say "dense file exit $?: $(tail -1 $OUT/dense_all.log)"
grep -a "^FAILED\|^E  " $OUT/dense_all.log | head -20 >> "$L"
C="ds_h64_sq1_ragged ds_h32_sq1_ragged ds_h16_sq2_ragged ds_h64_sq1_uniform ds_h32_sq1_uniform"
for r in 1 2; do
  for split in auto segments; do
    echo "== $split ($r)" >> "$L"; MLA_CUPY_SPLIT=$split PYTHONPATH=. bench
  done
  say "round $r"
done
echo "== probe segments" >> "$L"
MLA_CUPY_SPLIT=segments PYTHONPATH=.:tests timeout 60 python3 tools/ring_probe.py ds_h64_sq1_ragged >> "$L" 2>&1
cat "$L"
