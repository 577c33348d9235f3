#!/usr/bin/env bash
# Session 27, call 1.  Device, repository root:  OUT=$OUT bash tools/results/session27_call1.sh
# sk = next_raw_skew.patch: the fp8 producers' reads of the staged records rotated by key
# (render.raw_skew).  A quarter warp's LDS.128 reads the same 16-byte piece of eight
# consecutive keys' 576-byte records: 36 bank columns apart, so 2 of 8 columns, 4-way
# conflicted (fp8_ds_mla's 656-byte records are not).  Narrow fp8 h16: 9 LDS.128 a thread a
# tile, 8 warps: ~1150 shared-memory wavefronts a tile -> ~380; with the stores (~640) and
# the math's operand reads (~1360) that is 1.7 -> 1.35 us a tile of shared-memory time.
# Predicted: fp8 h16 321 -> 275-300 us; the producer alone (nomath) 252 -> 200-225;
# fp8_ds_mla h16 unchanged (+-1%); ring fp8 h128 and sparse fp8 h128: 0-5% faster.
# Also: HEAD's two sides apart (idle, nomath) after session 26's broadcast step, and the
# dense test file (not run on e47b523).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
(PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm0.txt 2>&1); say "warm HEAD: $(head -1 /tmp/warm0.txt)"
GPU_FILE_TIMEOUT=90 checked_patch /tmp/sk next_raw_skew.patch sk narrow fp8 sparse dense
check_tree /tmp/sk sk_ring ring
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192 fp8_b128_h128_s8192 sparse_fp8_b128_sq1_h128"
BENCH_TIMEOUT=70 compare_rounds sk /tmp/sk
echo "== HEAD sides apart" >> "$L"
PYTHONPATH=.:tests timeout 60 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 --keep-mma --ablate idle,nomath >> "$L" 2>&1
say "ceiling HEAD $?"
echo "== sk sides apart" >> "$L"
(cd /tmp/sk && PYTHONPATH=.:tests timeout 60 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 --keep-mma --ablate idle,nomath >> "$L" 2>&1)
say "ceiling sk $?"
cat "$L"
