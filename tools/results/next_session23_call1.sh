#!/usr/bin/env bash
# Prepared in session 22 (CPU-checked: no spills under nvcc or NVRTC, 168 registers; not run).
# Device, repository root:  OUT=$OUT bash tools/results/next_session23_call1.sh
# sb = next_pair_slot_bits.patch: every row of a pair CTA is one token's, so a slot's
#   visibility is one bit, not a token interval: each producer warp ballots its 8 slots
#   into a byte-word (local STS and a 4-byte st.async to the peer, 16 bytes a tile instead of
#   256), and warpgroup 0 masks S with bit tests (2 LDS.128 a tile instead of 16 LDS.64 and
#   two compares a value; its region 1731 -> 1659 instructions, ISETP 107 -> 38).
# Prediction: warpgroup 0's softmax is on the per-tile chain (its FMNMX / ISETP after the
#   key-token loads were its hottest stalls, session 22 call 1): b128 h128 187.8 -> 183-186 us.
# Then the pair's split counts: b2 s_q2 and smaller batches at several P (session 22: P=8
#   27.7 us against the chosen 13's 29.6).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/sb next_pair_slot_bits.patch
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair mla_decode_fp8_ds_mla_causal_sparse_fold0_hopper_pair"
warm_kernels . /tmp/sb; say "warm"
(cd /tmp/sb && PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule pair > $OUT/check_sb.txt 2>&1)
rc=$?; say "check sb exit $rc: $(grep -h 'correctness' $OUT/check_sb.txt)"
if [ $rc -ne 0 ]; then cat "$L"; grep FAIL $OUT/check_sb.txt | cut -c1-300; exit 1; fi
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128"
ROUNDS=2 BENCH_TIMEOUT=60 compare_rounds sb /tmp/sb
PYTHONPATH=.:tests timeout 120 python3 tools/split_sweep.py sparse_ds_mla_b2_sq2_h128:4,8,11,13,16 \
  >> "$L" 2>&1; say "sweep $?"
cat "$L"
