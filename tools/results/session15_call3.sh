#!/usr/bin/env bash
# Session 15, call 3: where the 32-row narrow tile's time goes.  Call 2 refuted the
# epilogue reading (staged stores: 197.6 us against 195.2).  The math loop's source is
# the same at 6a8b09d (176.6 us) and 422279c (208.4): only its compilation differs
# (245 -> 255 registers, +200 IMAD, +70 R2UR in the HGMMA span).  ncu --set full on one
# decode launch of DeepSeek h=32 uniform at those two commits and at HEAD (two math
# warpgroups), and h=16 uniform at HEAD, at the GPU's own clocks; details and SASS-level
# stall samples as CSV.
# Usage (device, repository root; carry .bisect): OUT=$OUT bash tools/results/session15_call3.sh
set -u
export PYTHONUNBUFFERED=1
ROOT=$PWD; L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
prof() {   # name tree case [env...]
  local name=$1 tree=$2 case=$3; shift 3
  (cd "$tree" && env "$@" PYTHONPATH=. timeout 120 ncu --clock-control none --kernel-name regex:mla_decode \
     --launch-skip 1 --launch-count 1 --set full --import-source no -f -o "$OUT/$name" \
     python3 "$ROOT/tools/kernel_times.py" --child "$case" --calls 1 > "$OUT/$name.log" 2>&1)
  say "$name exit $?"
  ncu --import "$OUT/$name.ncu-rep" --page details --csv > "$OUT/${name}_details.csv" 2>&1
  ncu --import "$OUT/$name.ncu-rep" --page source --csv --print-source sass > "$OUT/${name}_sass.csv" 2>&1
  say "$name csv $(wc -c < "$OUT/${name}_details.csv") $(wc -c < "$OUT/${name}_sass.csv")"
}
prof old_m32 .bisect/6a8b09d ds_h32_sq1_uniform MLA_CUPY_HOPPER_SCHEDULE=narrow
prof seg_m32 .bisect/422279c ds_h32_sq1_uniform MLA_CUPY_HOPPER_SCHEDULE=narrow
prof head_m32 . ds_h32_sq1_uniform
prof head_m16 . ds_h16_sq1_uniform
for n in old_m32 seg_m32 head_m32 head_m16; do
  echo "== $n" >> "$L"
  grep -E '"(Duration|DRAM Throughput|Memory Throughput|Issue Slots Busy|Issued Warp Per Scheduler|No Eligible|Registers Per Thread|Executed Ipc Active)"' \
    "$OUT/${n}_details.csv" | awk -F'","' '{print $(NF-2), $(NF-1), $NF}' | head -12 >> "$L"
done
ls -la $OUT >> "$L"
cat "$L"
