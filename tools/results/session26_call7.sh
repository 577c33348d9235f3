#!/usr/bin/env bash
# Session 26, call 7 (on fff0170+).  Device, repository root:  OUT=$OUT bash tools/results/session26_call7.sh
# pp = next_narrow_parallel_slot_polls.patch: the fp8 producer's nine empty-slot polls a
# tile by nine threads at once, before the raw-read barrier (which then also says the slots
# are free), instead of nine polls one after another by every thread after the copy issue.
# Call 5's ncu: the polls ~6% of the producer's samples.  Predicted: the producer alone
# (nomath) 268 -> 245-260 us; fp8 h16 341 -> 330-338, fp8_ds_mla 313 -> 305-312.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
GPU_FILE_TIMEOUT=120 checked_patch /tmp/pp next_narrow_parallel_slot_polls.patch pp narrow fp8 sparse
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192"
BENCH_TIMEOUT=120 compare_rounds pp /tmp/pp
(cd /tmp/pp && PYTHONPATH=.:tests timeout 100 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 \
  --keep-mma --ablate nomath >> "$L" 2>&1); say "pp sides exit $?"
cat "$L"
