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
#   PHASE=pair OUT=$OUT bash tools/results/session11_run.sh          (timeout 600)
#       next_pair_keys.patch (issue 9, prepared in session 10, CPU-checked only): sparse
#       fp8_ds_mla at 128 k heads in a cluster of two CTAs, each copying and dequantising 16
#       of every tile's 32 keys into both CTAs' buffers (local STS + st.async to the peer).
#       Session 8's pair split each key's columns (two bulk copies a key) and lost 233 -> 331
#       us; this one halves the copies, the raw reads and the conversions a CTA (SASS: 32
#       UNPACK, 64 HADD2.F32, 64 FMUL, 9 STS.128 + 9 STAS.128 a thread a tile, against the
#       ring's 64 / 128 / 128 / 18 STS.128).  Prediction: the producer alone 181 -> ~110 us at
#       h128 (if the conversions and copies are its cost), the kernel 225 -> ~170-185 us
#       (FlashMLA 181); s_q2 438 -> ~340.  Risk: a hang (hopper_check --schedule pair runs
#       first under a timeout), the remote stores' cost (session 8's profile: 27% at stores).
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
if [ "${PHASE:-ablate}" = pair ]; then
  rm -rf /tmp/pr && cp -r . /tmp/pr && (cd /tmp/pr && git apply tools/results/next_pair_keys.patch) || { echo "pair: apply failed" >> "$L"; exit 0; }
  cd /tmp/pr
  timeout 120 python3 tools/hopper_check.py --schedule pair > $OUT/check_pair.txt 2>&1; echo "[exit $?]" >> $OUT/check_pair.txt
  grep "correctness:\|exit\|^FAIL" $OUT/check_pair.txt | head >> "$L"
  grep -q "^\[exit 0\]" $OUT/check_pair.txt || exit 0
  timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_sparse.py > $OUT/tests_sparse.txt 2>&1; echo "[sparse exit $?]" >> $OUT/tests_sparse.txt
  tail -2 $OUT/tests_sparse.txt >> "$L"
  S="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128"
  for sch in ring auto ring auto; do echo "== schedule $sch" >> "$L"
    MLA_CUPY_HOPPER_SCHEDULE=$sch timeout 120 python3 tools/bench.py $S --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"; done
  for sch in ring auto; do echo "== ceiling $sch" >> "$L"
    MLA_CUPY_HOPPER_SCHEDULE=$sch timeout 60 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 >> "$L" 2>&1; done
  (timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tail -2) >> "$L"
  exit 0
fi
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
