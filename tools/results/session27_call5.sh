#!/usr/bin/env bash
# Session 27, call 5.  Device, repository root:  OUT=$OUT bash tools/results/session27_call5.sh
# The README's dense fp8 table at d29a4fb (the skewed raw reads, the narrow lookahead, both
# ropes 2-way): `mla-cupy bench --suite fp8` (bf16 beside each fp8 layout, h 16 and 128) and
# the sparse fp8 row, 30 repeats, JSON kept.
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 200 python3 tools/bench.py --suite fp8 --repeats 30 --commit d29a4fb --json $OUT/bench_fp8.json \
  2>&1 | grep -v "^# wrote" | cut -c1-200 >> "$L"
say "fp8 suite $?"
PYTHONPATH=. timeout 60 python3 tools/bench.py sparse_fp8_b128_sq1_h128 --repeats 30 --commit d29a4fb 2>&1 | cut -c1-200 >> "$L"
say "sparse fp8 $?"
cat "$L"
