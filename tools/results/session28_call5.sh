#!/usr/bin/env bash
# Session 28, call 5.  Device, repository root:  OUT=$OUT bash tools/results/session28_call5.sh
# HEAD = 848fc3c (fp8_ds_mla's group scales in the 16-row narrow kernel's math) + the routing
# change: sparse fp8_ds_mla row groups of 16 rows or fewer run the narrow kernel under auto
# (compiler.narrow_auto_rows).  The GPU test files on it (the sparse file now runs the narrow
# kernel under auto at h <= 16), the memcheck, then the routing beside the ring on sparse
# h16 / h8 shapes (auto, then MLA_CUPY_HOPPER_SCHEDULE=ring), two rounds.
# Predicted: auto at or below the ring on each (b128 h16: 101 vs 105).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
(PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm0.txt 2>&1); say "warm HEAD: $(head -1 /tmp/warm0.txt)"
GPU_FILE_TIMEOUT=150 gpu_files HEAD fp8 sparse dense
memcheck_sparse HEAD
C="sparse_ds_mla_b128_sq1_h16 sparse_ds_mla_b32_sq1_h16 sparse_ds_mla_b2_sq1_h16 sparse_ds_mla_b128_sq1_h16_top4096 sparse_ds_mla_b128_sq1_h8 fp8_ds_mla_b128_h16_s8192"
for r in 1 2; do
  echo "== auto ($r)" >> "$L"; PYTHONPATH=. BENCH_TIMEOUT=90 bench
  echo "== ring ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=ring PYTHONPATH=. BENCH_TIMEOUT=90 bench
  for m in narrow ring; do   # sparse `fp8` rows at h16: auto keeps the ring (not measured since session 12)
    echo "== sparse fp8 h16 $m ($r)" >> "$L"
    MLA_CUPY_HOPPER_SCHEDULE=$m PYTHONPATH=. timeout 60 python3 tools/bench.py --batch-size 128 --num-heads 16 \
      --q-len 1 --cache-len 32768 --layout fp8 --mask null --sparse-topk 2048 --sink --repeats 20 --check-seqs 2 2>&1 \
      | grep -v "^#" | cut -c1-100 >> "$L"
  done
  say "round $r"
done
cat "$L"
