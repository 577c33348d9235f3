#!/usr/bin/env bash
# Session 35, call 4 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session35_call4.sh
# HEAD = the narrow kernel's keys under L2 evict_first where a share holds at most 16 tiles
# (SHORT_SHARE_TILES; call 3: the hint everywhere took b8 h16 40.0 -> 36.1 and b16 61.8 ->
# 59.1, but b32 +2.5%, b128 +3%, DeepSeek h16 +4%).  /tmp/old: HEAD without it.
# Predictions: hopper_check narrow 0 failures; b8 h16 -9% (~36), b16 -4%, b32 / b128 h16 /
# DeepSeek h16 within 1% of /tmp/old.  Then the dense file on HEAD, and b8 h16 / b128 h16
# beside the peers (b8 h16 0.99 in session 34: ~1.05 predicted).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
check_tree . head narrow
patched /tmp/old next_narrow_no_short_evict.patch
for r in 1 2; do
  for t in . /tmp/old; do
    echo "== $t ($r)" >> "$L"
    (cd $t && C="b8_h16_s8192 b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged" PYTHONPATH=. bench
     for b in 16 32; do
       PYTHONPATH=. timeout 60 python3 tools/bench.py --batch-size $b --num-heads 16 --cache-len 8192 \
         --repeats 20 --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
     done)
  done
  say "round $r"
done
GPU_FILE_TIMEOUT=200 gpu_files head dense
(COMMIT=8d9e1a9 timeout 200 bash tools/gpu_bench.sh b8_h16_s8192 b128_h16_s8192 \
  --repeats 20 > /dev/null 2>&1)
say "peer bench $?"
cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote" >> "$L"
cat "$L"
