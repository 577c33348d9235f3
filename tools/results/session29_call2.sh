#!/usr/bin/env bash
# Session 29 call 2 (device, repository root): OUT=$OUT bash tools/results/session29_call2.sh
# 1. ei = next_narrow_early_issue.patch: the fp8 producer issues tile t+1's record copy as
#    soon as tile t's records are in registers, before it waits for tile t's slots (today the
#    slot wait comes first, so when the math is behind the copy's HBM latency follows the
#    wait).  Prediction: if the 1.3x over the slower side is this coupling, fp8 h16
#    257 -> 215-235 and ds_mla 271 -> 225-250; if it is contention for shared memory or
#    issue, within 1%.
# 2. s18 = next_narrow_slots18.patch: the ring capped at 18 slots (fp8 has 21, ds_mla 19):
#    how much the ring's depth matters (coupling: slower; contention: unchanged).
# 3. ei's sides apart (producer_ceiling: full, without wgmma, idle).
# 4. next_session29_call2.sh's sparse h16 split sweeps (narrow vs ring, b32 and b64).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=60 checked_patch /tmp/ei next_narrow_early_issue.patch ei narrow fp8 sparse
patched /tmp/s18 next_narrow_slots18.patch
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192" BENCH_TIMEOUT=60 bench_trees . /tmp/ei /tmp/s18
C="--batch-size 128 --num-heads 16 --q-len 1 --cache-len 32768 --layout fp8_ds_mla --mask null --sparse-topk 2048 --sink" \
  BENCH_TIMEOUT=60 bench_trees . /tmp/ei
echo "== ei sides apart" >> "$L"
(cd /tmp/ei && PYTHONPATH=.:tests timeout 60 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 --keep-mma --ablate idle >> "$L" 2>&1)
say "sides"
for m in narrow ring; do
  echo "== split sweep, $m" >> "$L"
  MLA_CUPY_HOPPER_SCHEDULE=$m PYTHONPATH=. timeout 90 python3 tools/split_sweep.py \
    sparse_ds_mla_b32_sq1_h16:1,2,4,8 sparse_ds_mla_b64_sq1_h16:1,2,4 2>&1 | grep -v "^#" | cut -c1-120 >> "$L"
done
say "sweeps"
cat "$L"
