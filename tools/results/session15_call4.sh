#!/usr/bin/env bash
# Session 15, call 4.  Call 3's profile (ncu, DeepSeek h=32 uniform at HEAD): the two math
# warpgroups are SM-bound (data waits 11% of their samples, against 24% at 16 rows); their
# HGMMA stream carries two R2UR per HGMMA (540 in the HGMMA span, 0 uniform-datapath ops)
# because wg = tid >> 7 is not known warp-uniform.  The working tree takes wg from lane 0
# (__shfl_sync): 271 R2UR, span 2647 -> 2428 instructions; 16-row and fp8 SASS identical.
# Prediction: h=32 uniform 196 -> ~185 us, h=32 / h=16 s_q=2 ragged 217 -> ~205; 16-row
# rows unchanged.  Also timed: HEAD, and one 32-row math warpgroup (render.narrow_consumers
# -> 1) at HEAD.
# Usage (device, repository root; carry .bisect): OUT=$OUT bash tools/results/session15_call4.sh
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
C="ds_h32_sq1_uniform ds_h32_sq1_ragged ds_h16_sq2_ragged ds_h16_sq2_uniform ds_h16_sq1_ragged"
bench() { timeout 100 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"; }
timeout 60 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; say "check exit $?"
grep "correctness\|^FAIL" $OUT/check.txt | head -3 >> "$L"
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "narrow or segment_mode or longest_first or independent or batch_invariant" > $OUT/tests.txt 2>&1
say "tests exit $? $(tail -1 $OUT/tests.txt)"
for r in 1 2; do
  echo "== wg uniform ($r)" >> "$L"; bench; say "bench"
  echo "== HEAD ($r)" >> "$L"; (cd .bisect/head && PYTHONPATH=. bench); say "bench"
  echo "== one 32-row warpgroup ($r)" >> "$L"; (cd .bisect/onewg && PYTHONPATH=. bench); say "bench"
done
cat "$L"
