#!/usr/bin/env bash
# Prepared in session 14 (not run: the device budget was spent).  The 32-row narrow tile ran
# DeepSeek h=32 s_q=1 uniform in 175.7 us (and the ring 179.0) at 1aeab07 + M32 patch
# (session 12, log 2026-12-01i_h200_1aeab07_narrow_patches.log, P=2, 3.46 TB/s), but 192-196
# us in sessions 13-14 (P=2, 3.10 TB/s, the same bytes), with or without segment mode; the
# 16-row rows did not move (163.7 then, 164.4 now).  Which commit, and the ring now?
# Prediction: the regression lands with segment mode (422279c: Seg/next_segment around the
# main loop, O stored from registers instead of staged rows); if the ring at HEAD is ~179,
# 32-row groups should run the ring until the narrow tile is fixed.
# Local prep (this machine, repository root), then carry .bisect:
#   for c in 198897f 6a8b09d 422279c dba5066; do mkdir -p .bisect/$c && git archive $c mla_cupy \
#     kernels tools/bench.py | tar -x -C .bisect/$c; done
# Usage (device): OUT=$OUT bash tools/results/next_m32_bisect.sh   (run: carry [".bisect"])
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
C="ds_h32_sq1_uniform ds_h16_sq2_uniform ds_h16_sq1_uniform ds_h32_sq1_ragged"
bench() { timeout 100 python3 tools/bench.py $C --repeats 20 --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"; }
for r in 1 2; do
  echo "== HEAD auto ($r)" >> "$L"; PYTHONPATH=. bench
  echo "== HEAD ring ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=ring PYTHONPATH=. bench
  echo "== HEAD narrow splits ($r)" >> "$L"; MLA_CUPY_SPLIT=partitions PYTHONPATH=. bench
  for c in 198897f 6a8b09d 422279c dba5066; do
    echo "== $c narrow ($r)" >> "$L"
    (cd .bisect/$c && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. bench)
  done
  echo "[t=$((SECONDS-T0))s] round $r" >> "$L"
done
cat "$L"
