#!/usr/bin/env bash
# Session 26, call 3.  Device, repository root:  OUT=$OUT bash tools/results/session26_call3.sh
# p2 = next_narrow_two_producers.patch: the narrow kernel's fp8 producer at 16 rows in two
# warpgroups (384 threads), each thread a quarter of a key's record (8 latent pieces, its
# group scale, 2 rope pieces) instead of a half; the raw-read and publish barriers span
# both.  Call 2: the producer with the math reduced to its hand-over took 275 us (2.2 us a
# tile, one warp a scheduler), the math with an idle producer 224.  Predicted: the
# producer alone (nomath) 275 -> 170-200 us; fp8 h16 355 -> 250-290, fp8_ds_mla 371 ->
# 260-300.  Then sparse h16 (the ring under auto) against the forced narrow in both trees.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
GPU_FILE_TIMEOUT=120 checked_patch /tmp/p2 next_narrow_two_producers.patch p2 narrow fp8 sparse
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192"
BENCH_TIMEOUT=120 compare_rounds p2 /tmp/p2
(cd /tmp/p2 && PYTHONPATH=.:tests timeout 120 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 \
  fp8_ds_mla_b128_h16_s8192 --keep-mma --ablate idle,nomath >> "$L" 2>&1); say "p2 sides exit $?"
C="sparse_ds_mla_b128_sq1_h16"
echo "== HEAD auto" >> "$L"; PYTHONPATH=. bench
echo "== HEAD narrow" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. bench
echo "== p2 narrow" >> "$L"; (cd /tmp/p2 && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. bench); say sparse
cat "$L"
