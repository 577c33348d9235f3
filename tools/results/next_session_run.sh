#!/usr/bin/env bash
# Device calls for next_raw_ahead2.patch (prepared 2026-12-01, session 9): the fp8 producer
# requests each tile's records by bulk copy two tiles ahead (RAW_AHEAD = 2) instead of one,
# so up to 42 KB of records are in flight a CTA (session 9: the producer is bound by bytes
# in flight; bf16 sparse keeps ~37 KB in flight and runs at 1.77 TB/s against ds_mla's 0.89).
# Usage (device machine, repository root; carry .whl; timeout_s 600):
#   PHASE=check OUT=$OUT bash tools/results/next_session_run.sh
#       hopper_check --schedule ring of the patched tree (a hang shows as its timeout), its
#       fp8 / sparse / dense / hardening GPU tests, memcheck; then HEAD and the patch timed
#       side by side twice on the sparse and dense fp8 rows, and each producer's ceiling
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; w=/tmp/w; mkdir -p $w
rm -rf /tmp/la && cp -r . /tmp/la && (cd /tmp/la && git apply tools/results/next_raw_ahead2.patch) || echo "la: apply failed" >> "$L"
(timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
(cd /tmp/la && timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
wait
(cd /tmp/la && timeout 120 python3 tools/hopper_check.py --schedule ring > $OUT/check.txt 2>&1; echo "[exit $?]" >> $OUT/check.txt)
grep "correctness:\|exit\|^FAIL" $OUT/check.txt | head >> "$L"
grep -q "correctness: 0 failures" $OUT/check.txt || exit 0
bench() { (cd $1 && timeout 120 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110); }
S="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b128_sq1_h64 sparse_ds_mla_b128_sq1_h16 fp8_ds_mla_b128_h16_s8192 fp8_ds_mla_b128_h128_s8192 fp8_b128_h128_s8192"
for t in . /tmp/la . /tmp/la; do echo "== $t" >> "$L"; bench $t "$S" >> "$L"; done
for t in . /tmp/la; do echo "== ceiling $t" >> "$L"
  (cd $t && timeout 120 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 fp8_ds_mla_b128_h16_s8192) >> "$L" 2>&1; done
for n in fp8 sparse dense hardening; do
  (cd /tmp/la && timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $w/$n.log 2>&1; echo "[$n exit $?]" >> $w/$n.log) &
done
wait
for n in fp8 sparse dense hardening; do echo "== $n"; tail -2 $w/$n.log; done >> "$L"
(cd /tmp/la && timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tail -2) >> "$L"
cat $w/*.log > $OUT/tests.txt
