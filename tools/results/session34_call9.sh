#!/usr/bin/env bash
# Session 34, call 9 (device, the working tree with next_seesaw_32x4.patch applied; 186 s of
# device budget left, so no kernel-cache warm-up and no second tree):
#   OUT=$OUT bash tools/results/session34_call9.sh
# Call 8: the ring at 64 rows is bound by its math and hand-overs (warpgroup 0 computes
# every S).  The seesaw (both warpgroups compute S, on alternate tiles) at 64 rows was
# slower than the ring with its two 64-key buffers (memory latency exposed, session 32:
# h64 uniform 199.7 against 173.4).  next_seesaw_32x4.patch: the seesaw with the ring's
# four 32-key buffers (its loader warps step over their parity's tiles).  Each case is
# checked against the reference (2 sequences) before it is timed.
# Prediction: DeepSeek h64 uniform under the forced seesaw 32x4 ~170 us (the ring: 179.7-
# 182.6 this session), h128 uniform (auto: the seesaw) within 3% of 64x2's 234.7-240.1.
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=. timeout 60 python3 tools/bench.py ds_h64_sq1_uniform ds_h64_sq1_ragged \
  --repeats 20 --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"
echo "[t=$((SECONDS-T0))s] h64 done" >> "$L"
PYTHONPATH=. timeout 30 python3 tools/bench.py ds_h128_sq1_uniform --repeats 20 --check-seqs 2 2>&1 \
  | grep -v "^#" | cut -c1-110 >> "$L"
echo "[t=$((SECONDS-T0))s] h128 done" >> "$L"
cat "$L"
