#!/usr/bin/env bash
# Session 28, call 3.  Device, repository root:  OUT=$OUT bash tools/results/session28_call3.sh
# sm = next_pt_stmatrix.patch: the narrow kernel's softmax writes P^T by stmatrix .trans
# (4 8x8 matrices an instruction: ST_REGS / 8 STSM a tile and thread) instead of a 16-bit
# store per weight (ST_REGS STS.U16 and their address math): the math warpgroup's
# per-tile issue, not the loads.  Predicted: fp8 h16 257 -> 248-254, fp8_ds_mla h16
# 290 -> 285-290 (producer-bound), bf16 h16 / ds_h32 (copy-bound) unchanged, b8 h16 -1-2%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
(PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm0.txt 2>&1); say "warm HEAD: $(head -1 /tmp/warm0.txt)"
GPU_FILE_TIMEOUT=60 checked_patch /tmp/sm next_pt_stmatrix.patch sm narrow fp8 sparse
C="b128_h16_s8192 b8_h16_s8192 ds_h32_sq1_ragged fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192"
for r in 1 2; do
  for t in . /tmp/sm; do echo "== $t ($r)" >> "$L"; (cd $t && PYTHONPATH=. BENCH_TIMEOUT=80 bench); done
  say "round $r"
done
cat "$L"
