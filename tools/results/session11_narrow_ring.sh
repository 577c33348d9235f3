#!/usr/bin/env bash
# Session 11: the narrow kernel's load ring of 25 column-chunk slots (was two 64-key
# buffers).  Prediction: b128 h16 311 -> ~298-303 us (loads ~2 tiles ahead instead of
# ~1), b8 h16 39 -> ~37; the old kernel is the committed HEAD~ (timed in the same call
# from a copy with the patch reverted).
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
timeout 100 python3 tools/hopper_check.py --schedule narrow > $OUT/check_narrow.txt 2>&1; echo "[exit $?]" >> $OUT/check_narrow.txt
grep "correctness\|exit\|^FAIL" $OUT/check_narrow.txt | head >> "$L"
grep -q "^\[exit 0\]" $OUT/check_narrow.txt || { cat "$L"; exit 0; }
C="b128_h16_s8192 b8_h16_s8192 ds_h16_sq1_uniform"
rm -rf /tmp/old && cp -r . /tmp/old && (cd /tmp/old && git apply -R tools/results/2026-12-01h_narrow_ring.patch)
for r in 1 2; do
  echo "== slots" >> "$L"; timeout 60 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
  echo "== two buffers" >> "$L"; (cd /tmp/old && timeout 60 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100) >> "$L"
done
timeout 60 python3 tools/warm_kernel_cache.py > /dev/null 2>&1
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py -k narrow > $OUT/tests.txt 2>&1; echo "[tests exit $?]" >> $OUT/tests.txt
tail -2 $OUT/tests.txt >> "$L"
cat "$L"
