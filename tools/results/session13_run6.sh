#!/usr/bin/env bash
# Session 13, call 6 (device, repository root): sequence_shares loads the first 128
# sequences' lengths beside batch_size (one HBM round less before the first tile).
# Prediction: decode ~1 us less in segment mode (b8 44.3 -> ~43.3; b128 308 -> ~307).
# Correctness first (hopper_check narrow, the segment tests), beside the forced-portable
# tail of test_gpu_dense (call 5 timed out after 82 passed), then the rows it moves.
# Usage: OUT=$OUT bash tools/results/session13_run6.sh  (timeout 420)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
timeout 100 python3 tools/warm_kernel_cache.py >> "$L" 2>&1
timeout 60 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; echo "[check exit $?]" >> "$L"
grep "correctness\|^FAIL" $OUT/check.txt | head -5 >> "$L"
( timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
    -k "segment_mode or longest_first or independent" > $OUT/segments.txt 2>&1 &
  MLA_CUPY_BACKEND=portable timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
    -k "segment_mode or narrow_schedule or long_sequence or cache_over or graph_replay or torch_tensors or zero_length or infinite" \
    > $OUT/portable_tail.txt 2>&1 &
  wait )
for f in segments portable_tail; do echo "== $f: $(tail -1 $OUT/$f.txt)"; done >> "$L"
grep -q " passed" $OUT/segments.txt && ! grep -q "failed" $OUT/segments.txt || { cat "$L"; exit 0; }
C="b128_h16_s8192 b8_h16_s8192 ds_h16_sq1_ragged ds_h16_sq1_uniform"
echo "== segments (auto)" >> "$L"
timeout 40 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
echo "== partitions" >> "$L"
MLA_CUPY_SPLIT=partitions timeout 40 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
cat "$L"
