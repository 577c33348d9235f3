#!/usr/bin/env bash
# Session 13, call 5 (device, repository root): the forced-portable dense tests and the
# segment tests (call 4 timed them out: the even batches were 132 x 4000 keys; now small),
# then where segment mode's extra microseconds on even batches go: ncu's kernel durations
# (decode and combine apart; ncu serialises, so no PDL overlap) for b128 h16 and b8 h16,
# segments against partitions.
# Usage: OUT=$OUT bash tools/results/session13_run5.sh  (timeout 600)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
timeout 100 python3 tools/warm_kernel_cache.py >> "$L" 2>&1
( MLA_CUPY_BACKEND=portable timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
    > $OUT/portable_dense.txt 2>&1 &
  timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py -k "segment_mode or narrow" \
    > $OUT/segments.txt 2>&1 &
  wait )
for f in portable_dense segments; do echo "== $f: $(tail -1 $OUT/$f.txt)"; done >> "$L"
for c in b128_h16_s8192 b8_h16_s8192; do
  for m in auto partitions; do
    echo "== $c $m" >> "$L"
    MLA_CUPY_SPLIT=$m timeout 60 ncu --metrics gpu__time_duration.sum --csv -k regex:"mla_" --launch-count 8 \
      python3 tools/bench.py $c --repeats 20 --check-seqs 1 --eager-calls 1 2>/dev/null \
      | grep '"gpu__time_duration' | awk -F'","' '{print $5, $9, $(NF)}' | tr -d '"' | cut -c1-90 >> "$L"
  done
done
cat "$L"
