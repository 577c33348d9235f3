#!/usr/bin/env bash
# Session 9's last device call: the coalesced register producer (2026-12-01f_dropped_coalesced_producer.patch:
# a warp loads whole records, 8 keys a warp, in half-tile steps; no bulk copy) checked, then
# timed beside HEAD, then the fp8 / sparse GPU tests and memcheck.  Writes as it goes.
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
rm -rf /tmp/co && cp -r . /tmp/co && (cd /tmp/co && git apply tools/results/2026-12-01f_dropped_coalesced_producer.patch) || echo "co: apply failed" >> "$L"
(cd /tmp/co && timeout 110 python3 tools/hopper_check.py --schedule ring > $OUT/check.txt 2>&1; echo "[exit $?]" >> $OUT/check.txt)
grep "correctness:\|exit\|^FAIL" $OUT/check.txt | head >> "$L"
grep -q "correctness: 0 failures" $OUT/check.txt || exit 0
S="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 fp8_ds_mla_b128_h16_s8192 fp8_ds_mla_b128_h128_s8192 fp8_b128_h128_s8192"
for t in /tmp/co .; do echo "== $t" >> "$L"
  (cd $t && timeout 60 python3 tools/bench.py $S --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100) >> "$L"; done
(cd /tmp/co && timeout 40 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128) >> "$L" 2>&1
for n in fp8 sparse; do
  (cd /tmp/co && timeout 90 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $OUT/$n.txt 2>&1; echo "[$n exit $?]" >> $OUT/$n.txt) &
done
wait
for n in fp8 sparse; do tail -2 $OUT/$n.txt; done >> "$L"
(cd /tmp/co && timeout 80 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tail -2) >> "$L"
