#!/usr/bin/env bash
# Session 13, call 1 (device, repository root, branch s13 = HEAD + next_segments.patch +
# next_narrow_rs_on_segments.patch as commits 422279c, 74ecace):
#   correctness of both (hopper_check narrow, the segment / narrow / fp8 GPU tests), then
#   segments vs partitions on the ragged/uniform rows and the RS form vs the ring on fp8.
# Predictions (session 12): ds_h16_sq1 ragged 294 -> ~175-185 us (segments); uniform within
#   2% of partitions; fp8_ds_mla b128 h16 356 -> ~200-240, fp8 374 -> ~190-230 (RS).
# Usage: OUT=$OUT bash tools/results/session13_run.sh  (timeout 600)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
t0=$(date +%s); stamp() { echo "[t=$(( $(date +%s) - t0 ))s] $*" >> "$L"; }
timeout 100 python3 tools/warm_kernel_cache.py > $OUT/warm.txt 2>&1; stamp "warm exit $?"
timeout 100 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; stamp "check exit $?"
grep "correctness\|^FAIL" $OUT/check.txt | head >> "$L"
timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py tests/test_gpu_fp8.py \
  -k "segment_mode or narrow_schedule or independent or fp8" > $OUT/tests.txt 2>&1; stamp "tests exit $?"
tail -3 $OUT/tests.txt >> "$L"
C="ds_h16_sq1_ragged ds_h16_sq1_uniform b128_h16_s8192 b8_h16_s8192 ds_h32_sq1_ragged"
F="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192"
b() { timeout 45 python3 tools/bench.py "$@" --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"; }
echo "== segments (auto)" >> "$L"; b $C; stamp
echo "== partitions" >> "$L"; MLA_CUPY_SPLIT=partitions b $C; stamp
echo "== RS (auto)" >> "$L"; b $F; stamp
echo "== ring" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=ring MLA_CUPY_BACKEND=hopper b $F; stamp
cat "$L"
