#!/usr/bin/env bash
# Session 16, call 3.  Call 2's kernel_times: FlashMLA's decode kernel alone is faster than
# ours on every row measured (b128 h128 430 vs 540 us, ds h32 uniform 152 vs 184, ds h16
# ragged 160 vs 182, b32 h128 70 vs 89, b8 h16 33 vs 42); the combines differ by 1-5 us.
# So what is the decode gap made of?  tools/ncu_compare.py (ncu --set full, one call each,
# the GPU's clocks) on the seesaw (b128 h128), the 32-row narrow tile (ds h32 uniform) and
# the sparse ring (V3.2 b128 h128), beside FlashMLA's kernels.  Predictions: seesaw: ours
# executes more instructions per tile and its tensor pipe is less busy (~60% vs ~75%);
# narrow m32: more instructions (SM-bound, call 15's profile), FlashMLA's DRAM throughput
# higher.  Then ncu_hotspots of the 32-row tile (fixed: its report directory).
# Usage (device, repository root, .whl carried): OUT=$OUT bash tools/results/session16_call3.sh
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1; say "peers installed"
for c in b128_h128_s8192 ds_h32_sq1_uniform sparse_ds_mla_b128_sq1_h128; do
  PYTHONPATH=.:/tmp/site timeout 170 python3 tools/ncu_compare.py $c --peer flashmla --out /tmp/nc > $OUT/compare_$c.txt 2>&1
  say "compare $c exit $?"
done
cp /tmp/nc/b128_h128_s8192_*.csv.gz $OUT/ 2>/dev/null
PYTHONPATH=. timeout 120 python3 tools/ncu_hotspots.py ds_h32_sq1_uniform mla_decode --top 30 --out /tmp/hs \
  > $OUT/hotspots_m32.txt 2>&1; say "hotspots exit $?"
cat "$L"; head -70 $OUT/compare_b128_h128_s8192.txt
