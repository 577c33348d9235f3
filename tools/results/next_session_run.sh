#!/usr/bin/env bash
# Device calls for next_raw_ahead2.patch (prepared 2026-12-01, session 9): the fp8 producer
# requests each tile's records by bulk copy two tiles ahead (RAW_AHEAD = 2) instead of one,
# so up to 42 KB of records are in flight a CTA (session 9: the producer is bound by bytes
# in flight; bf16 sparse keeps ~37 KB in flight and runs at 1.77 TB/s against ds_mla's 0.89).
# And next_fast_page_div.patch: the loaders' divisions by the runtime page size (a key's
# page and slot) become a multiply-high and a shift (PageDiv in kernels/common/keys.cuh.j2),
# and a row's offset one multiply-add; every decode family, portable included.
# Usage (device machine, repository root; carry .whl; timeout_s 600 each):
#   PHASE=pagediv OUT=$OUT bash tools/results/next_session_run.sh
#       the page-division patch: hopper_check (both schedules), every decode GPU test file on
#       the default families and the dense / sparse / fp8 ones forced portable, memcheck;
#       then HEAD and the patch timed side by side twice (~8 minutes)
#   PHASE=check OUT=$OUT bash tools/results/next_session_run.sh
#       hopper_check --schedule ring of the patched tree (a hang shows as its timeout), its
#       fp8 / sparse / dense / hardening GPU tests, memcheck; then HEAD and the patch timed
#       side by side twice on the sparse and dense fp8 rows, and each producer's ceiling
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; w=/tmp/w; mkdir -p $w
bench() { (cd $1 && timeout 120 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110); }
if [ "${PHASE:-check}" = pagediv ]; then
  rm -rf /tmp/fd && cp -r . /tmp/fd && (cd /tmp/fd && git apply tools/results/next_fast_page_div.patch) || echo "fd: apply failed" >> "$L"
  (timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
  (cd /tmp/fd && timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
  wait
  (cd /tmp/fd && timeout 150 python3 tools/hopper_check.py > $OUT/check_fd.txt 2>&1; echo "[exit $?]" >> $OUT/check_fd.txt)
  grep "correctness:\|exit\|^FAIL" $OUT/check_fd.txt | head >> "$L"
  grep -q "correctness: 0 failures" $OUT/check_fd.txt || exit 0
  for n in fp8 sparse dense hardening; do
    (cd /tmp/fd && timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $w/$n.log 2>&1; echo "[$n exit $?]" >> $w/$n.log) &
  done
  wait
  for n in fp8 sparse dense; do
    (cd /tmp/fd && MLA_CUPY_BACKEND=portable timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $w/portable_$n.log 2>&1; echo "[portable $n exit $?]" >> $w/portable_$n.log) &
  done
  wait
  for f in $w/*.log; do echo "== $f"; tail -2 $f; done >> "$L"
  (cd /tmp/fd && timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tail -2) >> "$L"
  cat $w/*.log > $OUT/tests.txt
  S="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 fp8_ds_mla_b128_h16_s8192 fp8_ds_mla_b128_h128_s8192 fp8_b128_h128_s8192"
  BF="--batch-size 128 --num-heads 128 --q-len 1 --cache-len 32768 --layout bf16 --sparse-topk 2048"
  P16="--batch-size 128 --num-heads 16 --q-len 1 --cache-len 8192 --layout fp8"
  for t in . /tmp/fd; do echo "== $t" >> "$L"; bench $t "$S" >> "$L"; bench $t "$BF" >> "$L"; bench $t "$P16" >> "$L"; done
  for t in . /tmp/fd; do echo "== $t (again)" >> "$L"; bench $t "$S" >> "$L"; done
  (cd /tmp/fd && timeout 60 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 fp8_ds_mla_b128_h16_s8192) >> "$L" 2>&1
  exit 0
fi
rm -rf /tmp/la && cp -r . /tmp/la && (cd /tmp/la && git apply tools/results/next_raw_ahead2.patch) || echo "la: apply failed" >> "$L"
(timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
(cd /tmp/la && timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
wait
(cd /tmp/la && timeout 120 python3 tools/hopper_check.py --schedule ring > $OUT/check.txt 2>&1; echo "[exit $?]" >> $OUT/check.txt)
grep "correctness:\|exit\|^FAIL" $OUT/check.txt | head >> "$L"
grep -q "correctness: 0 failures" $OUT/check.txt || exit 0
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
