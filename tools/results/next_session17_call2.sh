#!/usr/bin/env bash
# Prepared in session 16 (CPU-checked; not run).  next_narrow_first_slot.patch: the 32-row
# narrow tile takes each tile's first ring slot from lane 0 once and the chunks' slots from it
# by wrapping (one SHFL + R2UR a tile instead of one a chunk).  SASS (nvcc 13, sm_90a): the
# HGMMA span 2174 -> 2090 instructions, R2UR 34 -> 4, IMAD 365 -> 325, LEA 140 -> 92, 160
# registers, no spills; the 16-row and fp8 narrow SASS unchanged (nvdisasm diff 0 lines).
# Session 16's ncu_hotspots of that tile: R2UR 16.5% of the stall samples (short scoreboard,
# each after the chunk's SHFL).  Prediction: DeepSeek h32 rows 2-3% faster, h16 rows equal.
# Usage (device, repository root): OUT=$OUT bash tools/results/next_session17_call2.sh
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm"
rm -rf /tmp/fs && cp -r . /tmp/fs && (cd /tmp/fs && git apply tools/results/next_narrow_first_slot.patch) || say "apply failed"
(cd /tmp/fs && PYTHONPATH=. timeout 150 python3 tools/hopper_check.py --schedule narrow > $OUT/check_fs.txt 2>&1); say "check exit $?"
grep "correctness\|^FAIL" $OUT/check_fs.txt | head -4 >> "$L"
(cd /tmp/fs && PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "narrow or segment_mode" > $OUT/tests_fs.txt 2>&1); say "tests exit $? $(tail -1 $OUT/tests_fs.txt)"
C="ds_h32_sq1_uniform ds_h32_sq1_ragged ds_h16_sq2_ragged ds_h16_sq1_uniform b128_h16_s8192"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  echo "== first slot ($r)" >> "$L"; (cd /tmp/fs && PYTHONPATH=. bench); say bench
done
cat "$L"
