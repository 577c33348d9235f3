#!/usr/bin/env bash
# Session 35, call 5 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session35_call5.sh
# Call 4: the runtime L2 policy (evict_first at <= 16 tiles a share, evict_normal above)
# took b8 h16 40.2 / 39.6 -> 36.2 / 36.2 (FlashMLA 37.9 in the same run: x1.05), b16 -2%,
# but the long shares under evict_normal lost as much as under evict_first (b128 h16 301.8
# -> 309.4, DeepSeek h16 uniform +3%, ragged +2%): the hinted copy itself costs them.
# HEAD: a uniform branch, the long shares' copy without a hint (as before session 35), the
# short ones' with evict_first.  /tmp/old: the narrow kernel before session 35.
# Predictions: hopper_check narrow 0 failures; b8 h16 ~36.2, b16 ~60.3; b32, b128 h16,
# DeepSeek h16 within 1% of /tmp/old.  Then b8 / b128 h16 beside the peers, then the
# dense file on HEAD.
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
(COMMIT=1209677 timeout 100 bash tools/gpu_bench.sh b8_h16_s8192 b128_h16_s8192 ds_h16_sq1_uniform \
  --repeats 20 > /dev/null 2>&1)
say "peer bench $?"
cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote" >> "$L"
GPU_FILE_TIMEOUT=170 gpu_files head dense
cat "$L"
