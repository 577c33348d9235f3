#!/usr/bin/env bash
# Session 20, call 1 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session20_call1.sh
# next_session20_call1.sh (warm, the forced-portable dense file, hopper_check narrow, the
# seesaw's and FlashMLA's dense hotspots on b128 h128), plus the sparse fp8_ds_mla h128
# hotspots of ours (the ring with its producer) and of FlashMLA's sparse kernel, for issue 9.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, portable
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site
fi
export PYTHONPATH=.:tests:${PYTHONPATH:-}
timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(tail -1 /tmp/warm.txt)"
hs() {  # CASE REGEX NAME [--peer P]
  local c=$1 k=$2 n=$3; shift 3
  timeout 120 python3 tools/ncu_hotspots.py $c $k --top 60 --out /tmp/hs/$n "$@" > $OUT/hotspots_$n.txt 2>&1
  say "hotspots $n $?"
}
hs b128_h128_s8192 hopper_seesaw ours
hs b128_h128_s8192 splitkv_mla flashmla --peer flashmla
hs sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse sparse_ours
hs sparse_ds_mla_b128_sq1_h128 sparse sparse_flashmla --peer flashmla
(PORTABLE_TIMEOUT=300 portable dense) &
(timeout 200 python3 tools/hopper_check.py --schedule narrow > $OUT/check_narrow.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_narrow.txt) &
wait
say "narrow: $(grep -h 'correctness\|exit' $OUT/check_narrow.txt | tr '\n' ' ')"
cat "$L"
