#!/usr/bin/env bash
# Session 33, call 6 (device, repository root; the last 190 s of the budget):
#   OUT=$OUT bash tools/results/session33_call6.sh
# Before the ring's segment mode can be auto: shapes other than DeepSeek b64, auto
# (the host's P / balanced splits) against segments, one round.  Prediction: small
# batches (b1, b8) within 3% either way (132 one-segment shares against P splits),
# b128 h32 uniform equal (the aligned cut: one sequence a share, as P=1).
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
for shape in "1 64 32768" "8 64 8192" "128 32 8192"; do
  set -- $shape
  for split in auto segments; do
    echo "== b$1 h$2 c$3 $split" >> "$L"
    MLA_CUPY_SPLIT=$split PYTHONPATH=. timeout 40 python3 tools/bench.py --batch-size $1 --num-heads $2 \
      --cache-len $3 --repeats 20 --check-seqs 1 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
  done
done
say done
cat "$L"
