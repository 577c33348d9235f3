#!/usr/bin/env bash
# Prepared in session 14 for the next session's first device call (carry [".bisect"], built
# by the local prep line in next_m32_bisect.sh).  Two questions, one call:
# (1) the 32-row regression (next_m32_bisect.sh: HEAD auto / ring / splits and the narrow tile
#     at four older commits, two rounds);
# (2) where a call's time goes, decode and combine apart, at the GPU's own clocks
#     (tools/kernel_times.py, its first H200 run: check its numbers against bench's first).
set -u
export PYTHONUNBUFFERED=1
T0=$SECONDS
for c in 198897f 6a8b09d 422279c dba5066; do
  [ -f .bisect/$c/tools/bench.py ] || { echo ".bisect/$c missing: run the prep line of next_m32_bisect.sh here, then carry .bisect"; exit 0; }
done
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 > $OUT/warm.txt
# the SM clock while the 32-row kernels run: an SM-bound kernel follows it, a memory-bound
# one does not (the competing reading of the regression: session 12's machine clocked higher)
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active \
  --format=csv -lms 1000 > /tmp/clocks.csv 2>&1 &
SMI=$!
OUT=$OUT timeout 330 bash tools/results/next_m32_bisect.sh > /dev/null 2>&1
echo "[t=$((SECONDS-T0))s] bisect exit $?" >> $OUT/log.txt
kill $SMI 2>/dev/null
python3 - /tmp/clocks.csv >> $OUT/log.txt <<'PY'
import sys, statistics
rows = [l.split(", ") for l in open(sys.argv[1]) if l[:1].isdigit()]
sm = [float(r[1].split()[0]) for r in rows if len(r) > 3 and r[1].split()[0].replace(".", "").isdigit()]
print(f"SM clock during the bisect: n={len(sm)} median {statistics.median(sm) if sm else 0:.0f} MHz "
      f"min {min(sm) if sm else 0:.0f} max {max(sm) if sm else 0:.0f}; throttle reasons seen: "
      f"{sorted(set(r[5].strip() for r in rows if len(r) > 5))}")
PY
PYTHONPATH=. timeout $((560 - (SECONDS - T0))) python3 tools/kernel_times.py ds_h32_sq1_uniform \
  ds_h32_sq1_ragged ds_h16_sq1_ragged b8_h16_s8192 b32_h128_s4096 --calls 8 > $OUT/kernel_times.txt 2>&1
echo "[t=$((SECONDS-T0))s] kernel_times exit $?" >> $OUT/log.txt
cat $OUT/warm.txt $OUT/log.txt $OUT/kernel_times.txt
