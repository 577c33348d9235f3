#!/usr/bin/env bash
# Session 28, call 4.  Device, repository root:  OUT=$OUT bash tools/results/session28_call4.sh
# ms = next_math_scales.patch: fp8_ds_mla in the 16-row narrow kernel with its group scales
# applied by the math warpgroup (render.narrow_math_scales): the producer decodes e4m3 to
# fp16 unscaled (one cvt a pair, as `fp8`; its bf16 rope to fp16) and writes each key's four
# scales beside the tile; the math keeps a partial S^T a group (4 x 8 more registers: 150
# in all, no spill), S = S_rope + sum_g scale_g S_g, and writes one P^T a group (P x
# scale_g, by stmatrix) for O^T's chunks of that group.  fp16 MMAs, the portable kernels'
# numerics for ds_mla (docs/spec.md section 3).
# Predicted: fp8_ds_mla h16 290 -> 255-270 (producer 6 -> 1 instructions a pair, the math
# ~80 more a tile); sparse ds_mla h16 forced narrow 122.5 -> ~105 (the ring 103.9); the
# other rows (fp8 h16: the kernel's SASS is identical) unchanged.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
(PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm0.txt 2>&1); say "warm HEAD: $(head -1 /tmp/warm0.txt)"
GPU_FILE_TIMEOUT=60 checked_patch /tmp/ms next_math_scales.patch ms narrow fp8 sparse
check_tree /tmp/ms ms2 narrow
C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 sparse_ds_mla_b128_sq1_h16"
for r in 1 2; do
  for t in . /tmp/ms; do echo "== $t ($r)" >> "$L"; (cd $t && PYTHONPATH=. BENCH_TIMEOUT=80 bench); done
  for t in . /tmp/ms; do echo "== $t narrow ($r)" >> "$L"; (cd $t && C=sparse_ds_mla_b128_sq1_h16 MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. BENCH_TIMEOUT=60 bench); done
  say "round $r"
done
echo "== ms sides apart" >> "$L"
(cd /tmp/ms && PYTHONPATH=.:tests timeout 60 python3 tools/producer_ceiling.py fp8_ds_mla_b128_h16_s8192 --keep-mma --ablate idle,nomath >> "$L" 2>&1)
say "ceiling ms $?"
cat "$L"
