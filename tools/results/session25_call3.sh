#!/usr/bin/env bash
# Session 25, call 3.  Device, repository root:  OUT=$OUT bash tools/results/session25_call3.sh
# ff = next_narrow_fp8_f16.patch: the narrow kernel's wgmmas in fp16 for `fp8` rows (the
# producer decodes e4m3 -> fp16 with one cvt per two values instead of cvt + two
# f16->f32 + a bf16 pack; bf16 queries converted to fp16 in shared memory once landed;
# P^T in fp16).  Static SASS: conversions 656 -> 244, registers 225 -> 156, no spills.
# Predicted: fp8_b128_h16_s8192 385 -> 190-230 us (the producer was conversion-bound at
# ~2.3 us a tile against ~1.2 us of memory); fp8_ds_mla and bf16 rows unchanged.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/ff next_narrow_fp8_f16.patch
(cd /tmp/ff && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm ff: $(head -1 /tmp/warm.txt)"
check_tree /tmp/ff ff narrow
(cd /tmp/ff && GPU_FILE_TIMEOUT=150 gpu_files ff fp8 sparse && memcheck_sparse ff)
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192 b128_h16_s8192"
BENCH_TIMEOUT=150 compare_rounds ff /tmp/ff
cat "$L"
