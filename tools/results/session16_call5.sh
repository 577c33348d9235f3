#!/usr/bin/env bash
# Session 16, call 5 (closing).  HEAD: the warp-a-row combine with four partials in flight
# a warp (call 4 ran two: b32 h128 -3%, b1 h128 and b8 h16 +3% beside b9b856f), and the
# seesaw's V descriptor half as a literal (R2UR 158 -> 150).  Predictions: b1 back to ~61 us,
# b32 ~95, ds ragged rows as call 4; seesaw rows within 1%.  Checked first (combine_check,
# hopper_check seesaw, the dense / sparse / hardening GPU tests that run the combine and the
# seesaw), then the peer table of the changed rows (tools/gpu_bench.sh, FlashMLA and
# FlashInfer), then ours beside b9b856f (.bisect) twice.
# Usage (device, repository root, .whl and .bisect carried):
#   COMMIT=<hash> OUT=$OUT bash tools/results/session16_call5.sh
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm"
PYTHONPATH=.:tests timeout 100 python3 tools/combine_check.py > $OUT/checks.txt 2>&1; say "combine_check exit $?"
PYTHONPATH=. timeout 120 python3 tools/hopper_check.py --schedule seesaw >> $OUT/checks.txt 2>&1; say "hopper_check seesaw exit $?"
grep "combine check\|correctness\|^FAIL" $OUT/checks.txt | head -5 >> "$L"
PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "independent or combine or segment or longest or graph or sinks or zero_length or hopper_schedules" > $OUT/tests.txt 2>&1 &
PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_sparse.py tests/test_gpu_hardening.py > $OUT/tests2.txt 2>&1 &
wait; say "tests: dense $(tail -1 $OUT/tests.txt) | sparse+hardening $(tail -1 $OUT/tests2.txt)"
grep -hE "FAILED|Error" $OUT/tests.txt $OUT/tests2.txt | head -5 >> "$L"
mkdir -p $OUT/peers
OUT=$OUT/peers timeout 200 bash tools/gpu_bench.sh b8_h16_s8192 b128_h128_s8192 b32_h128_s4096 b1_h128_s65536 \
  ds_h16_sq1_ragged ds_h32_sq1_uniform ds_h32_sq1_ragged ds_h64_sq1_uniform ds_h64_sq1_ragged --repeats 20 > /dev/null 2>&1
say "peers exit $?"; grep -v "^#" $OUT/peers/bench.log | cut -c1-170 >> "$L"
C="b32_h128_s4096 b8_h16_s8192 b1_h128_s65536 b128_h128_s8192 ds_h16_sq1_ragged ds_h32_sq1_ragged"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  echo "== b9b856f ($r)" >> "$L"; (cd .bisect/b9b856f && PYTHONPATH=. bench); say bench
done
cat "$L"
