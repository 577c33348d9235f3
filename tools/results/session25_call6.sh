#!/usr/bin/env bash
# Session 25, call 6.  Device, repository root:  OUT=$OUT bash tools/results/session25_call6.sh
# rb = next_narrow_raw_buffers.patch: the narrow kernel's fp8 producer with two raw record
# buffers where the slots left keep CHUNKS + V_CHUNKS - 2 (fp8 and fp8_ds_mla at 16 rows:
# 16 and 15 slots), the next tile's records landing while it decodes this one.  Call 3:
# fp16 MMAs took fp8 h16 only 383 -> 357 us, so the decode was not the bound; 357 us is
# ~2.9 us a 64-key tile against ~1.2 us of the SM's share of DRAM: one tile's copy in
# flight, issued only once the previous tile's records were read.  Predicted: fp8 h16
# 357 -> 200-260 us, fp8_ds_mla h16 371 -> 220-280; bf16 unchanged.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/rb next_narrow_raw_buffers.patch
(cd /tmp/rb && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm rb: $(head -1 /tmp/warm.txt)"
check_tree /tmp/rb rb narrow
(cd /tmp/rb && GPU_FILE_TIMEOUT=120 gpu_files rb fp8 sparse && memcheck_sparse rb)
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192"
BENCH_TIMEOUT=120 compare_rounds rb /tmp/rb
cat "$L"
