#!/usr/bin/env bash
# Prepared in session 13 (CPU-checked: every narrow variant compiles without spills; the
# slot-ring model passes with the new order at >= 18 slots and the old one below).
# The narrow kernel queues S^T(j) first and O^T(j - 1) behind it, waits for S^T(j) alone
# (wgmma_wait<1>), computes tile j's scores while the tensor cores run O^T(j - 1), then
# retires O^T(j - 1), rescales O and writes P^T (softmax_scores / softmax_publish).
# Prediction (uncertain: the 32-row tile's bound is not profiled): DeepSeek h=32 s_q=1
# ragged 235 -> ~215 us, h=16 ragged 184 -> ~178; b=128 h=16 within 2 us either way.
# Usage (device, repository root): [ON_WALK=1] OUT=$OUT bash tools/results/next_narrow_ot_behind_st.sh
#   ON_WALK=1: on next_narrow_walk_smem.patch (then no spill anywhere, nvcc 13 included)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
rm -rf /tmp/po && cp -r . /tmp/po && (cd /tmp/po && if [ "${ON_WALK:-0}" = 1 ]; then git apply tools/results/next_narrow_walk_smem.patch && git apply tools/results/next_narrow_ot_behind_st_on_walk.patch; else git apply tools/results/next_narrow_ot_behind_st.patch; fi) \
  || { echo "apply failed" >> "$L"; cat "$L"; exit 0; }
C="ds_h32_sq1_ragged ds_h16_sq1_ragged ds_h16_sq2_ragged b128_h16_s8192 b8_h16_s8192 fp8_ds_mla_b128_h16_s8192"
echo "== before (HEAD)" >> "$L"
timeout 60 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
cd /tmp/po
timeout 100 python3 tools/warm_kernel_cache.py > /dev/null 2>&1
timeout 100 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; echo "[check exit $?]" >> "$L"
grep "correctness\|^FAIL" $OUT/check.txt | head -5 >> "$L"
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py tests/test_gpu_sparse.py \
  -k "narrow or segment_mode" > $OUT/tests.txt 2>&1; echo "[tests exit $?] $(tail -1 $OUT/tests.txt)" >> "$L"
grep -q "^\[tests exit 0\]" "$L" || { cat "$L"; exit 0; }
echo "== after" >> "$L"
timeout 60 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
cat "$L"
