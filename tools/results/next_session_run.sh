#!/usr/bin/env bash
# One device call for the pair schedule prepared on 2026-12-01 (seventh session):
# tools/results/next_pair_schedule.patch (sparse fp8_ds_mla at 128·k heads: two CTAs of a
# cluster, each dequantising half of every tile into both; NOTES.md has the design and the
# prediction).  Correctness first, with a short timeout (a hang shows as a timeout of the
# check), then timed beside HEAD in the same run, then where the time goes in both.
# Usage (device machine, repository root; .whl not needed):
#   OUT=$OUT bash tools/results/next_session_run.sh     (about 5 minutes; run it with timeout_s 600)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"
rm -rf /tmp/pair && cp -r . /tmp/pair && (cd /tmp/pair && git apply tools/results/next_pair_schedule.patch) \
  || echo "pair: patch failed" >> "$L"
(timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_head.txt 2>&1) &
(cd /tmp/pair && timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_pair.txt 2>&1) &
wait
tail -1 /tmp/warm_head.txt >> "$L"; tail -1 /tmp/warm_pair.txt >> "$L"
echo "== pair: hopper_check --schedule pair, then ring (the ds_mla ring path is touched too)" >> "$L"
(cd /tmp/pair && timeout 90 python3 tools/hopper_check.py --schedule pair > /tmp/check_pair.txt 2>&1
 echo "[exit $?]" >> /tmp/check_pair.txt
 timeout 90 python3 tools/hopper_check.py --quick --schedule ring >> /tmp/check_pair.txt 2>&1
 echo "[exit $?]" >> /tmp/check_pair.txt)
grep -h "correctness:\|\[exit\|FAIL" /tmp/check_pair.txt | head -20 >> "$L"
if grep -q "correctness: 0 failures" /tmp/check_pair.txt; then
  (cd /tmp/pair && timeout 200 python3 -m pytest -m gpu tests/test_gpu_sparse.py tests/test_gpu_fp8.py -q \
     -p no:cacheprovider 2>&1 | tail -3) >> "$L"
  (cd /tmp/pair && timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 \
     python3 tools/memcheck_sparse.py 2>&1 | tail -2) >> "$L"
fi
bench() { (cd $1 && timeout 150 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-120); }
S="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128"
for tree in . /tmp/pair . /tmp/pair; do
  [ "$tree" = /tmp/pair ] && ! grep -q "correctness: 0 failures" /tmp/check_pair.txt && continue
  echo "== bench $tree" >> "$L"; bench $tree "$S" >> "$L"
done
# where the time goes: HEAD's ring and the pair, ds_mla b128 s_q1 h128
echo "== hotspots HEAD" >> "$L"
timeout 120 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse --top 16 --out /tmp >> "$L" 2>&1
gzip -c /tmp/hotspots_source.csv > $OUT/hotspots_head.csv.gz
if grep -q "correctness: 0 failures" /tmp/check_pair.txt; then
  echo "== hotspots pair" >> "$L"
  (cd /tmp/pair && timeout 120 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse \
     --top 16 --out /tmp/pair) >> "$L" 2>&1
  gzip -c /tmp/pair/hotspots_source.csv > $OUT/hotspots_pair.csv.gz
fi
cp /tmp/check_pair.txt $OUT/checks.txt
