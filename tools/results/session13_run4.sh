#!/usr/bin/env bash
# Session 13, call 4 (device, repository root, .whl carried): the forced-portable dense and
# sparse GPU tests and the segment tests (after the test fix), then `mla-cupy bench` beside
# FlashMLA and FlashInfer on issue 8's rows, the DeepSeek ragged/uniform rows segment mode
# changes, and issue 9's dense fp8 and sparse rows.
# Usage: COMMIT=<commit> OUT=$OUT bash tools/results/session13_run4.sh  (timeout 600)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/tests.txt; : > "$L"
timeout 100 python3 tools/warm_kernel_cache.py >> "$L" 2>&1
( for f in dense sparse; do
    MLA_CUPY_BACKEND=portable timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_$f.py \
      > /tmp/portable_$f.txt 2>&1 &
  done
  timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py -k segment_mode \
    > /tmp/segments.txt 2>&1 &
  wait )
for f in portable_dense portable_sparse segments; do echo "== $f"; grep -E "passed|failed|FAILED|Error" /tmp/$f.txt | tail -8; done >> "$L"
cat "$L"
CASES="b128_h16_s8192 b128_h128_s8192 b128_sq2_h128_varlen_causal b1_h128_s65536 b8_h16_s8192 b32_h128_s4096
 ds_h16_sq1_ragged ds_h16_sq1_uniform ds_h32_sq1_ragged ds_h16_sq2_ragged fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192
 sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b2_sq2_h128"
timeout 420 bash tools/gpu_bench.sh $CASES --repeats 30 > /dev/null 2>&1; echo "[bench exit $?]" >> "$L"
grep -v "^#" $OUT/bench.log | cut -c1-240
tail -1 "$L"
