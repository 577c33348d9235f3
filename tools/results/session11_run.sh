#!/usr/bin/env bash
# Session 11's first device call (prepared 2026-12-01 in session 10, CPU-checked only).
# Where does the fp8 producer's time go?  Session 10 found it issue-bound (a second producer
# warpgroup did not speed it up; its stall samples spread over ~650 instructions a tile, 384
# of them the e4m3 -> f32 x scale -> bf16 conversion).  producer_ceiling.py --ablate times the
# kernel without MMAs, then also without the scale multiply (what folding the group scales
# into S and P would save), without the whole conversion, and without the tile's stores.
# Predictions (session 10 NOTES): if instruction issue bounds it, the time without MMAs falls
# roughly with the instructions removed: noscale -20%, noconvert -55%, nostore -5%; if one
# pipe bounds it (a conversion pipe), noscale ~0% and noconvert large.  convert_rate.py says
# which: if "full" converts far more values a clock per SM than the producer does (~29 keys a
# us x 512 = ~8.5 values a clock at h16 dense), the conversion's issue rate is not the bound.
# Usage (device machine, repository root; timeout 300):
#   OUT=$OUT bash tools/results/session11_run.sh
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"
# the conversion's instructions alone, in registers, every SM full (tools/convert_rate.py):
# values a clock per SM for the producer's mix and for each instruction of it
timeout 60 python3 tools/convert_rate.py >> "$L" 2>&1; echo "[convert_rate exit $?]" >> "$L"
timeout 200 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 \
  fp8_ds_mla_b128_h16_s8192 fp8_b128_h128_s8192 --ablate noscale,noconvert,nostore >> "$L" 2>&1
echo "[ablate exit $?]" >> "$L"
mkdir -p /tmp/hs
timeout 90 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse --top 30 --out /tmp/hs \
  > $OUT/hotspots_sparse.txt 2>&1; echo "[hotspots exit $?]" >> $OUT/hotspots_sparse.txt
gzip -c /tmp/hs/hotspots_source.csv > $OUT/hotspots_sparse.csv.gz 2>/dev/null
head -8 $OUT/hotspots_sparse.txt >> "$L"
