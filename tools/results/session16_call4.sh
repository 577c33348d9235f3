#!/usr/bin/env bash
# Session 16, call 4.  (a) The combine as a warp a row, eight rows a CTA (call 2: ours 13.1 us
# at b32 h128 P=2 against FlashMLA's 8.0, 9.0 against 5.7 at ds h32).  Checked first
# (tools/combine_check.py: NaN-filled workspace, P 2..1100, h 5/8/16/128, both backends; the
# GPU tests that run the combine), then timed beside b9b856f (.bisect, the CTA-a-row
# combine).  Predictions (kernel_times, ncu): combine b32 h128 13.1 -> ~6 us, ds h32 9.0 ->
# ~5, b8 6.2 -> ~4, b1 h128 (P=64, eight warps a row) unchanged or better; bench b32 h128
# 98 -> ~92.  (b) The seesaw forced on DeepSeek h16/h32/h64 rows (FlashMLA runs them as
# 64-row tiles at 3.9 TB/s, call 3; our 32-row narrow tile is issue-bound: 62 M
# instructions against FlashMLA's 26 M): is a padded 64-row seesaw tile faster than the
# narrow tile at h32?
# Usage (device, repository root, .bisect carried): OUT=$OUT bash tools/results/session16_call4.sh
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm"
PYTHONPATH=.:tests timeout 150 python3 tools/combine_check.py > $OUT/combine_check.txt 2>&1; say "combine_check exit $?"
tail -3 $OUT/combine_check.txt >> "$L"
PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider -x tests/test_gpu_dense.py \
  -k "independent or combine or segment or longest or graph or sinks or zero_length" > $OUT/tests.txt 2>&1
say "tests exit $? $(tail -1 $OUT/tests.txt)"; grep -E "FAILED|Error" $OUT/tests.txt | head -5 >> "$L"
C="b32_h128_s4096 b8_h16_s8192 b1_h128_s65536 ds_h16_sq1_ragged ds_h32_sq1_uniform ds_h32_sq1_ragged"
for r in 1 2; do
  echo "== warp-a-row combine ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  echo "== b9b856f ($r)" >> "$L"; (cd .bisect/b9b856f && PYTHONPATH=. bench); say bench
done
PYTHONPATH=. timeout 120 python3 tools/kernel_times.py b32_h128_s4096 b8_h16_s8192 ds_h32_sq1_uniform b1_h128_s65536 \
  --calls 3 2>&1 | grep combine | cut -c1-130 >> "$L"; say "kernel_times"
C="ds_h16_sq1_ragged ds_h32_sq1_uniform ds_h32_sq1_ragged ds_h64_sq1_uniform ds_h64_sq1_ragged"
echo "== seesaw forced" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=. bench; say bench
echo "== auto" >> "$L"; PYTHONPATH=. bench; say bench
cat "$L"
