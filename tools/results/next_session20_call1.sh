#!/usr/bin/env bash
# Prepared in session 19 (not run).  Device, repository root, .whl carried (the peer's
# hotspots need FlashMLA):   OUT=$OUT bash tools/results/next_session20_call1.sh
# 1. What session 19 left unrun: the kernel cache warmed (16 processes: session 19's call
#    5 spent 400 s compiling in the tests and finished none), the forced-portable dense
#    file (77 of 89 passed before call 6's timeout), hopper_check --schedule narrow after
#    aba21e8 (the narrow source back to 8541a25's).
# 2. Where the seesaw's tile goes after PageDiv (1.806 us a 64-key tile at ds h128 uniform,
#    FlashMLA <= 1.78 with its overheads): ncu hotspots of ours and FlashMLA's on b128 h128.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, portable
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=.:tests:${PYTHONPATH:-}
timeout 240 python3 tools/warm_kernel_cache.py > $OUT/warm.txt 2>&1; say "warm: $(tail -1 $OUT/warm.txt)"
(PORTABLE_TIMEOUT=300 portable dense) &
(timeout 200 python3 tools/hopper_check.py --schedule narrow > $OUT/check_narrow.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_narrow.txt) &
wait
say "narrow: $(grep -h 'correctness\|exit' $OUT/check_narrow.txt | tr '\n' ' ')"
# (session 17's form: FlashMLA's kernel matches splitkv_mla)
timeout 200 python3 tools/ncu_hotspots.py b128_h128_s8192 hopper_seesaw --top 60 --out /tmp/hs/ours \
  > $OUT/hotspots_ours.txt 2>&1; say "hotspots ours $?"
timeout 200 python3 tools/ncu_hotspots.py b128_h128_s8192 splitkv_mla --peer flashmla --top 60 --out /tmp/hs/flashmla \
  > $OUT/hotspots_flashmla.txt 2>&1; say "hotspots flashmla $?"
cat "$L"
