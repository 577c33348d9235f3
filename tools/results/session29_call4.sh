#!/usr/bin/env bash
# Session 29 call 4 (device, repository root): OUT=$OUT bash tools/results/session29_call4.sh
# 1. rt = next_sparse_split_route.patch: sparse fp8 / fp8_ds_mla row groups of <= 16 rows run
#    the narrow kernel under auto only where a split holds >= 2048 keys; sparse `fp8` joins.
#    Checked (sparse and fp8 files), then auto on rt beside forced ring and forced narrow.
#    Prediction: auto = the faster of the two at every row (ds_mla b32/b64: the ring's
#    38.7/61.5; b128: narrow's 101); sparse fp8 at b128 narrow 96.6 vs ring 100.9, at b32/b64
#    (not measured before) the ring within 5% of narrow or ahead.
# 2. sl = next_narrow_slots_env.patch: the fp8 layouts' narrow ring capped at MLA_EXP_SLOTS
#    slots (fp8 m16 has 21, ds_mla 19; 18 measured 253 vs 257 for fp8 in call 2): 17, 18, 21.
#    Prediction: within +-2% from 17 to 21 (contention, not depth, bounds it, call 3).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/rt next_sparse_split_route.patch
(cd /tmp/rt && GPU_FILE_TIMEOUT=90 gpu_files rt sparse fp8)
sp() { echo "--batch-size $1 --num-heads 16 --q-len 1 --cache-len 32768 --layout $2 --mask null --sparse-topk 2048 --sink"; }
for layout in fp8_ds_mla fp8; do
  for b in 32 64 128; do
    for m in auto ring narrow; do
      echo "== $layout b$b $m" >> "$L"
      (cd /tmp/rt && C="$(sp $b $layout)" MLA_CUPY_HOPPER_SCHEDULE=$m PYTHONPATH=. BENCH_TIMEOUT=40 bench)
    done
  done
  say "sparse $layout"
done
patched /tmp/sl next_narrow_slots_env.patch
for r in 1 2; do
  for s in 17 18 21; do
    echo "== slots $s ($r)" >> "$L"
    (cd /tmp/sl && C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192" MLA_EXP_SLOTS=$s PYTHONPATH=. BENCH_TIMEOUT=40 bench)
  done
  say "slots round $r"
done
cat "$L"
