#!/usr/bin/env bash
# Session 30, call 2.  Device, repository root, .whl carried:
#   COMMIT=06000ef OUT=$OUT bash tools/results/session30_call2.sh
# 1. The fp8 file with the scale-bound test fixed (call 1: its only failure was the m16
#    assertion over an s_q=2 sequence; the values matched).  Prediction: 12 passed.
# 2. tools/narrow_phases.py (new): where b8 h16's CTA time goes (8 tiles a CTA), beside
#    b128 h16 and DeepSeek h16 uniform; the 32-row tile on DeepSeek h32 uniform / ragged.
#    Prediction: the prologue (shares' scan) + Q ~3-4 us, the first tile ~2 us after its
#    copies, a tile ~2.3 us (HBM share of an SM), the loop end to the end ~1 us.
# 3. b8 h16 against keys a sequence beside FlashMLA (next_session30_call2.sh's sweep):
#    the slopes within 10%, our intercept ~5 us above FlashMLA's.
# 4. next_shares_first_loads (below), then the peer run of every README row (the last:
#    session 25, 02686ab), in the time left.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
fi
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=90 gpu_files HEAD fp8
PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 16 --cases b8_h16_s8192 b128_h16_s8192 \
  ds_h16_sq1_uniform > $OUT/phases16.txt 2>&1; say "phases 16 exit $?"
PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 32 --cases ds_h32_sq1_uniform ds_h32_sq1_ragged \
  > $OUT/phases32.txt 2>&1; say "phases 32 exit $?"
cat $OUT/phases16.txt $OUT/phases32.txt >> "$L"
# next_shares_first_loads.patch (session 13, never measured): the first 128 sequences'
#    lengths load beside batch_size in the shares' scan.  Prediction: b8 h16 -1 us, others flat.
patched /tmp/fl next_shares_first_loads.patch
(cd /tmp/fl && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /dev/null 2>&1)
check_tree /tmp/fl fl narrow
C="b8_h16_s8192 b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged" BENCH_TIMEOUT=70 bench_trees . /tmp/fl
for s in 1024 4096 16384; do
  echo "== b8 h16 s$s" >> "$L"
  PYTHONPATH=.:/tmp/site timeout 60 python3 tools/bench.py --peer flashmla --batch-size 8 --num-heads 16 \
    --q-len 1 --cache-len $s --mask causal --repeats 30 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"
done
say "b8 sweep"
PEER_TIMEOUT=$((575 - SECONDS + T0)) peer_all_rows
cat "$L"
