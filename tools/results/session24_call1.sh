#!/usr/bin/env bash
# Session 24, call 1.  Device, repository root:  OUT=$OUT bash tools/results/session24_call1.sh
# ms = next_max_slack.patch: the running row max of every Hopper kernel moves only when a
#   tile's max passes it by more than 8 (log2 units), so O's 128-register rescale is skipped
#   on nearly every tile after the first (the exact max forced it on ~40%: a warp's 16 rows).
#   Prediction: seesaw rows (b128 h128, DeepSeek h128, b32 h128) -1 to -3%; the pair
#   (sparse h128) -1 to -2%; the ring (h64) and narrow (h16) rows, memory-bound, within 1%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/ms next_max_slack.patch
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
(cd /tmp/ms && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_ms.txt 2>&1); say "warm ms: $(head -1 /tmp/warm_ms.txt)"
for s in seesaw pair; do check_tree /tmp/ms ms_$s $s || { cat "$L"; exit 1; }; done
C="b128_h128_s8192 ds_h128_sq1_uniform ds_h128_sq1_ragged b32_h128_s4096 sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 ds_h64_sq1_uniform b128_h16_s8192"
BENCH_TIMEOUT=150 compare_rounds ms /tmp/ms
cat "$L"
