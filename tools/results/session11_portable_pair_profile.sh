#!/usr/bin/env bash
# Session 11, device call 5: the GPU tests on the forced portable path at HEAD (the default
# path ran in gpu_run.sh), then where the dropped cluster pair's time goes (ncu warp-stall
# samples of its kernel, sparse h128), for whoever takes the pair up again.
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
for f in ${PORTABLE_FILES-dense fp8 sparse}; do
  ( MLA_CUPY_BACKEND=portable timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
      tests/test_gpu_$f.py > /tmp/port_$f.log 2>&1; echo "[portable $f exit $?]" >> /tmp/port_$f.log ) &
done
rm -rf /tmp/pr && cp -r . /tmp/pr && (cd /tmp/pr && git apply --exclude=tools/producer_ceiling.py tools/results/2026-12-01h_dropped_pair_keys.patch) \
  && (cd /tmp/pr && mkdir -p /tmp/hs && MLA_CUPY_HOPPER_SCHEDULE=pair timeout 200 python3 tools/ncu_hotspots.py \
      sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse --top 40 --out /tmp/hs > $OUT/hotspots_pair.txt 2>&1; \
      echo "[hotspots exit $?]" >> $OUT/hotspots_pair.txt; gzip -c /tmp/hs/hotspots_source.csv > $OUT/hotspots_pair.csv.gz)
wait
for f in ${PORTABLE_FILES-dense fp8 sparse}; do tail -2 /tmp/port_$f.log >> "$L"; done
head -8 $OUT/hotspots_pair.txt >> "$L"
cat "$L"
