#!/usr/bin/env bash
# Session 15, call 5 (the closing device call).  HEAD: the narrow kernel's warpgroup index
# and slot addresses from lane 0 (its wgmma descriptors on the uniform datapath), and the
# warpgroup index of the seesaw and ring kernels and the ring's K / V descriptors likewise
# (HGMMA-span R2UR: seesaw 278 -> 158, ring 386 -> 119; CPU-checked).  Predictions: DeepSeek
# h=32 uniform 192 -> ~183 us, ragged 213 -> ~205; 16-row rows within 2 us; seesaw / ring rows
# (b32 / b128 h=128, sparse h=128) 0-5% faster.  Checked, then timed beside the peers and
# beside b4bdc6e (.bisect/head, ours only), then the GPU tests of the three kernels.
# Usage (device, repository root; carry .whl and .bisect):
#   COMMIT=<hash> OUT=$OUT bash tools/results/session15_call5.sh
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
C="b128_h16_s8192 b8_h16_s8192 b128_h128_s8192 b32_h128_s4096 ds_h16_sq1_ragged ds_h16_sq1_uniform
   ds_h32_sq1_ragged ds_h32_sq1_uniform ds_h16_sq2_ragged sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b2_sq2_h128"
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm"
PYTHONPATH=. timeout 120 python3 tools/hopper_check.py > $OUT/check.txt 2>&1; say "hopper_check exit $?"
grep "correctness\|^FAIL\|schedule" $OUT/check.txt | head -8 >> "$L"
mkdir -p $OUT/peers
OUT=$OUT/peers timeout 150 bash tools/gpu_bench.sh $C --repeats 20 > /dev/null 2>&1; say "peers exit $?"
grep -v "^#" $OUT/peers/bench.log | cut -c1-150 >> "$L"
(cd .bisect/head && PYTHONPATH=. timeout 90 python3 tools/bench.py $C --repeats 20 --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-100) > $OUT/base.txt
say "b4bdc6e bench"; cat $OUT/base.txt >> "$L"
left=$((540 - (SECONDS - T0)))
PYTHONPATH=.:tests timeout $left python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  tests/test_gpu_sparse.py tests/test_gpu_fp8.py > $OUT/tests.txt 2>&1
say "tests exit $? $(tail -1 $OUT/tests.txt)"
grep -E "FAILED|Error" $OUT/tests.txt | head -10 >> "$L"
cat "$L"
