#!/usr/bin/env bash
# Session 27, call 3.  Device, repository root:  OUT=$OUT bash tools/results/session27_call3.sh
# rr = next_ring_rope.patch: the ring's fp8 producer reads its e4m3 rope piece
# (ld_sub + ld_n) % 4 (2-way, not 4-way conflicted), as the narrow producer does since
# 7b7551f (narrow fp8 h16 -3% with the lookahead).  Predicted: fp8 h128 685 -> 665-680,
# sparse fp8 h128 211.5 -> 205-210; the narrow rows unchanged.
# pw = next_narrow_warp_publish.patch: the narrow fp8 producer's warps publish a tile each
# on its mbarrier (8 arrivals) after fencing their own stores, instead of a 256-thread
# bar.sync and one arrival (call 2's hotspots: the publish barrier and the arrival behind it
# ~7% of the samples, barrier stalls).  Predicted: fp8 h16 257 -> 245-255, fp8_ds_mla h16
# 290 -> 280-288; the ring rows unchanged.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
(PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm0.txt 2>&1); say "warm HEAD: $(head -1 /tmp/warm0.txt)"
GPU_FILE_TIMEOUT=60 checked_patch /tmp/rr next_ring_rope.patch rr ring fp8 sparse
GPU_FILE_TIMEOUT=60 checked_patch /tmp/pw next_narrow_warp_publish.patch pw narrow fp8 sparse
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192 fp8_b128_h128_s8192 sparse_fp8_b128_sq1_h128"
for r in 1 2; do
  for t in . /tmp/rr /tmp/pw; do echo "== $t ($r)" >> "$L"; (cd $t && PYTHONPATH=. BENCH_TIMEOUT=60 bench); done
  say "round $r"
done
echo "== pw sides apart" >> "$L"
(cd /tmp/pw && PYTHONPATH=.:tests timeout 60 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 --keep-mma --ablate idle,nomath >> "$L" 2>&1)
say "ceiling pw $?"
cat "$L"
