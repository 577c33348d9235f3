#!/usr/bin/env bash
# Session 15, call 6.  Call 5 at 6e8c7ef: the 32-row rows 2-3% faster than b4bdc6e, but
# DeepSeek h=16 uniform 166.2 -> 169.9 and b128 h=16 307.5 -> 314.1 (one run each).  The
# slot-address SHFL sat after the chunk's full-barrier wait, on the path from a chunk's
# arrival to its first HGMMA; the working tree issues it before the wait.  Prediction: the
# 16-row rows back at b4bdc6e's times (or within noise), the 32-row rows as at 6e8c7ef.
# Three trees interleaved, two rounds.
# Usage (device, repository root; carry .bisect): OUT=$OUT bash tools/results/session15_call6.sh
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
C="b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged ds_h32_sq1_uniform ds_h32_sq1_ragged"
bench() { timeout 80 python3 tools/bench.py $C --repeats 20 --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"; }
PYTHONPATH=. timeout 60 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; say "check exit $?"
grep "correctness\|^FAIL" $OUT/check.txt | head -3 >> "$L"
for r in 1 2; do
  echo "== SHFL before the wait ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  echo "== 6e8c7ef ($r)" >> "$L"; (cd .bisect/e6 && PYTHONPATH=. bench); say bench
  echo "== b4bdc6e ($r)" >> "$L"; (cd .bisect/head && PYTHONPATH=. bench); say bench
done
cat "$L"
