#!/usr/bin/env bash
# Session 18, call 5 (device, repository root):  OUT=$OUT bash tools/results/next_session18_call5.sh
# next_seesaw_segments.patch: segment mode for the seesaw (grid (row tiles, SMs / row tiles, 1),
# every row tile on the same shares of the batch's 64-key tiles; a segment at a time, with
# fresh mbarriers; partials share + sequence of grid_x x 64 rows).  Call 4's phase probe:
# ds h128 ragged runs 256 CTAs in two waves (122 start after 5 us, the last at 216-264 us),
# span 320 us against 254 us of tiles per SM.  Prediction: ds h128 ragged 345 -> ~300 us;
# ds h128 uniform and b32 h128 within 2% (the aligned cut runs them as now); b128 h128
# 0 to +2% (two whole sequences a CTA, and a combine launch that has nothing to merge).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched
patched /tmp/sg next_seesaw_segments.patch
(cd /tmp/sg && PYTHONPATH=. timeout 110 python3 tools/hopper_check.py --schedule seesaw > $OUT/check_seesaw.txt 2>&1; \
 echo "[exit $?]" >> $OUT/check_seesaw.txt) &
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096"
echo "== HEAD" >> "$L"; BENCH_TIMEOUT=100 PYTHONPATH=. bench; say bench
wait; say "check: $(grep -h 'correctness\|CRASH\|exit' $OUT/check_seesaw.txt | tr '\n' ' ')"
echo "== seesaw segments" >> "$L"; (cd /tmp/sg && BENCH_TIMEOUT=60 PYTHONPATH=. bench); say bench
cat "$L"
