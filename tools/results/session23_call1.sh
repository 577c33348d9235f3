#!/usr/bin/env bash
# Session 23, call 1 (prepared in session 22, CPU-checked: no spills and no serialised
# wgmmas under nvcc or NVRTC, protocol model 70 passed).  Device, repository root, .whl carried:
#   COMMIT=<HEAD> OUT=$OUT bash tools/results/session23_call1.sh
# sb = next_pair_slot_bits.patch: every row of a pair CTA is one token's, so a slot's
#   visibility is one bit, not a token interval: each producer warp ballots its 8 slots into
#   a word (local STS and a 4-byte st.async to the peer: 16 bytes a tile instead of 256), and
#   warpgroup 0 masks S with bit tests (2 LDS.128 a tile instead of 16 LDS.64 and two compares
#   a value; its region 1731 -> 1659 instructions, ISETP 107 -> 38).
# ov = next_pair_slot_bits_overlap.patch (sb and): warpgroup 0 issues S(j + 1) ahead of P V(j)
#   and runs its softmax while P V(j) is on the tensor cores (which idled through every
#   softmax); P(j) read back from its own slot; the last tile peeled (a conditional S in the
#   loop made ptxas serialise every wgmma, C7514); registers 208 / 176 / 120.
# Predictions (b128 h128 187.8 us at HEAD): sb 183-186 (warpgroup 0's mask was its hottest
#   stall, call 1); ov a further 3-8% if warpgroup 0's chain bounds the tile (the math alone
#   was 152 us, the producer alone ~156: if the producer bounds it, < 2%).
# Then the pair's split counts at b2 s_q2 (P=8 27.7 us against the chosen 13's 29.6), and
# HEAD's sparse rows beside FlashMLA (the set-up overlap f178c9e has not met FlashMLA yet).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/sb next_pair_slot_bits.patch
patched /tmp/ov next_pair_slot_bits_overlap.patch
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair mla_decode_fp8_ds_mla_causal_sparse_fold0_hopper_pair"
warm_kernels . /tmp/sb /tmp/ov; say "warm"
passed=""
for v in sb ov; do check_tree /tmp/$v $v pair && passed="$passed $v"; done
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. BENCH_TIMEOUT=60 bench; say bench
  for v in $passed; do
    echo "== $v ($r)" >> "$L"; (cd /tmp/$v && PYTHONPATH=. BENCH_TIMEOUT=60 bench); say bench
  done
done
PYTHONPATH=.:tests timeout 100 python3 tools/split_sweep.py sparse_ds_mla_b2_sq2_h128:4,8,11,13,16 \
  >> "$L" 2>&1; say "sweep $?"
(bash tools/gpu_bench.sh sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 \
  sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128 --repeats 20 > /dev/null 2>&1); say "peer bench $?"
cat "$L"
