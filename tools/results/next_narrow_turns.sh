#!/usr/bin/env bash
# Prepared in session 14 (CPU-checked: every narrow variant compiles without spills or wgmma
# serialisation, 32-row tile 156-158 registers; the 16-row kernel's SASS is identical; the
# protocol model with turns passes over segments, empty segments and edge tiles, and catches
# a missing closing sync).
# The 32-row tile's two math warpgroups take turns queueing their MMAs (named barriers 7 and
# 8, FA3's ping-pong): turn = O^T(j - 1) with S^T(j); the softmax of one warpgroup runs under
# the other's MMAs.  Without turns (bbc07f2) they start in step on the same full barriers and
# stay in step: both compute, then both run the softmax with the tensor pipe idle.
# Prediction: DeepSeek h=32 / h=16 s_q=2 ragged 213 -> ~190-195 us, uniform 196 -> ~180;
# 16-row rows unchanged.  If the uniform rows do not move, the SM-side chain is not the bound.
# Usage (device, repository root): OUT=$OUT bash tools/results/next_narrow_turns.sh
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
C="ds_h32_sq1_ragged ds_h32_sq1_uniform ds_h16_sq2_ragged ds_h16_sq2_uniform ds_h16_sq1_ragged"
bench() { timeout 100 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"; }
rm -rf /tmp/pt && cp -r . /tmp/pt && (cd /tmp/pt && git apply tools/results/next_narrow_turns.patch) \
  || { say "apply failed"; cat "$L"; exit 0; }
timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm HEAD"
cd /tmp/pt
timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm turns"
timeout 60 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; say "check exit $?"
grep "correctness\|^FAIL" $OUT/check.txt | head -3 >> "$L"
timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "narrow or segment_mode or longest_first or independent or batch_invariant" > $OUT/tests.txt 2>&1
say "tests exit $? $(tail -1 $OUT/tests.txt)"
if grep -q "passed" $OUT/tests.txt && ! grep -q "failed\|error" $OUT/tests.txt; then
  for r in 1 2; do
    echo "== turns ($r)" >> "$L"; bench; say "bench turns"
    echo "== HEAD ($r)" >> "$L"; (cd "$OLDPWD" && bench); say "bench HEAD"
  done
fi
cat "$L"
