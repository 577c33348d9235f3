#!/usr/bin/env bash
# Prepared in session 29 for session 30 (not run).  Needs FlashMLA's wheel carried in .whl/
# (download it on the working machine first, README "mla-cupy bench", then carry .whl):
#   OUT=$OUT bash tools/results/next_session30_call2.sh
# Issue 8's short row (b8 h16 s8192, 0.88): time against keys a sequence, ours and FlashMLA's,
# same inputs, so the intercept says the fixed cost a call and the slope the rate a key.
# Prediction: the slopes within 10% of each other (both near the copy rate at 8 sequences
# x 16 heads), our intercept ~5 us above FlashMLA's (session 26: our loader path alone at b8
# costs FlashMLA's whole call).
set -u
export PYTHONUNBUFFERED=1
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
  export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
. tools/results/device_steps.sh
begin_call
for s in 1024 2048 4096 8192 16384; do
  echo "== b8 h16 s$s" >> "$L"
  PYTHONPATH=.:${PYTHONPATH:-} timeout 90 python3 tools/bench.py --peer flashmla --batch-size 8 --num-heads 16 \
    --q-len 1 --cache-len $s --mask causal --repeats 30 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"
done
say "b8 sweep"
cat "$L"
