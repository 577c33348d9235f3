#!/usr/bin/env bash
# Device calls for the patch prepared on 2026-12-01 (eighth session), next_raw_registers.patch:
# the fp8 producer loads each thread's share of a record into registers a tile ahead
# (no bulk copy into shared memory, no re-read), setmaxnreg 216 / 160 / 128.
# Usage (device machine, repository root; carry .whl for the peers; timeout_s 600 each):
#   PHASE=check OUT=$OUT bash tools/results/next_session_run.sh
#       the patched tree: every variant compiled, hopper_check --schedule ring (a hang shows
#       as its timeout), the sparse / fp8 / dense GPU tests, memcheck; ~4 minutes
#   PHASE=bench OUT=$OUT bash tools/results/next_session_run.sh
#       HEAD, the patch (rr) and the patch with an L2 prefetch two tiles ahead (rp) side by
#       side, twice: the sparse rows and dense fp8 rows; bf16 sparse (the budgets changed for
#       it too); then each producer's ceiling; ~8 minutes
#   PHASE=crossover OUT=$OUT bash tools/results/next_session_run.sh
#       HEAD's dense fp8 and fp8_ds_mla at h16 / h32 / h64 and sparse fp8_ds_mla / bf16 at
#       h16 / h32, each on both families; ~6 minutes
#   PHASE=seesaw OUT=$OUT bash tools/results/next_session_run.sh
#       issue 8: next_seesaw_wg1_a_first.patch (warpgroup 1 queues P(a)'V_R(a) before
#       P(b)V_R(b)): hopper_check of the seesaw, the dense tests, the h128 rows of issue 8's
#       table beside HEAD, and the per-warp probe of the patch; ~6 minutes
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
rm -rf /tmp/rr && cp -r . /tmp/rr && (cd /tmp/rr && git apply tools/results/next_raw_registers.patch) || echo "rr: apply failed" >> "$L"
# rp: the same, plus an L2 prefetch of tile t + 2's records (next_raw_registers_prefetch.patch)
rm -rf /tmp/rp && cp -r /tmp/rr /tmp/rp && (cd /tmp/rp && git apply tools/results/next_raw_registers_prefetch.patch) || echo "rp: apply failed" >> "$L"
if [ "${PHASE}" = seesaw ]; then
  rm -rf /tmp/ss && cp -r . /tmp/ss && (cd /tmp/ss && git apply tools/results/next_seesaw_wg1_a_first.patch) || echo "ss: apply failed" >> "$L"
  (cd /tmp/ss && timeout 90 python3 tools/hopper_check.py --schedule seesaw; echo "[exit $?]") > $OUT/check_ss.txt 2>&1
  grep "correctness:\|exit\|^FAIL" $OUT/check_ss.txt | head >> "$L"
  (cd /tmp/ss && timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py 2>&1 | tail -2) >> "$L"
  C="b128_h128_s8192 b128_sq2_h128_varlen_causal b1_h128_s65536 b32_h128_s4096"
  for t in . /tmp/ss . /tmp/ss; do echo "== $t" >> "$L"
    (cd $t && timeout 120 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100) >> "$L"; done
  (cd /tmp/ss && timeout 60 python3 tools/phase_probe.py --pair 3 --per-warp) >> "$L" 2>&1
  exit 0
fi
if [ "${PHASE:-check}" = check ]; then
  (cd /tmp/rr && timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
  (cd /tmp/rp && timeout 150 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
  wait
  w=/tmp/w; mkdir -p $w
  (cd /tmp/rr && timeout 120 python3 tools/hopper_check.py --schedule ring > $w/check.log 2>&1; echo "[exit $?]" >> $w/check.log)
  grep "correctness:\|exit\|^FAIL" $w/check.log | head >> "$L"
  (cd /tmp/rp && timeout 120 python3 tools/hopper_check.py --schedule ring 2>&1 | grep "correctness:\|^FAIL" | sed 's/^/rp: /') >> "$L"
  if grep -q "correctness: 0 failures" $w/check.log; then
    for n in fp8 sparse dense hardening; do
      (cd /tmp/rr && timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $w/$n.log 2>&1; echo "[$n exit $?]" >> $w/$n.log) &
    done
    wait
    for n in fp8 sparse dense hardening; do echo "== $n"; tail -2 $w/$n.log; done >> "$L"
    (cd /tmp/rr && timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tail -2) >> "$L"
  fi
  cat $w/*.log > $OUT/all.txt
  exit 0
fi
bench() { (cd $1 && timeout 120 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110); }
S="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b128_sq1_h64 fp8_ds_mla_b128_h16_s8192 fp8_ds_mla_b128_h128_s8192 fp8_b128_h128_s8192"
BF="--batch-size 128 --num-heads 128 --q-len 1 --cache-len 32768 --layout bf16 --sparse-topk 2048"
if [ "${PHASE}" = bench ]; then
for t in . /tmp/rr /tmp/rp . /tmp/rr /tmp/rp; do echo "== $t" >> "$L"; bench $t "$S" >> "$L"; done
for t in . /tmp/rr; do echo "== bf16 sparse $t" >> "$L"; bench $t "$BF" >> "$L"; done
for t in . /tmp/rr /tmp/rp; do echo "== ceiling $t" >> "$L"
  (cd $t && timeout 120 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 fp8_ds_mla_b128_h16_s8192) >> "$L" 2>&1; done
exit 0
fi
# PHASE=crossover: where dense fp8 turns from portable to Hopper (compiler.HOPPER_MIN_ROWS = 64 from h16 and h128
# only): h16 / h32 / h64 both families, fp8 and fp8_ds_mla (HEAD's kernels)
for h in 16 32 64; do for lay in fp8 fp8_ds_mla; do for be in portable hopper; do
  echo "== $lay h$h $be" >> "$L"
  MLA_CUPY_BACKEND=$be bench . "--batch-size 128 --num-heads $h --q-len 1 --cache-len 8192 --layout $lay" >> "$L"
done; done; done
# and sparse top-2048 (s_k 32768) at h16 / h32: the portable kernels today (compiler.HOPPER_MIN_ROWS,
# set from bf16 sparse); the Hopper kernel's work does not shrink below 64 rows, so it should take
# about h64's time (fp8_ds_mla 121 us) against the portable 164
for h in 16 32; do for lay in fp8_ds_mla bf16; do for be in portable hopper; do
  echo "== sparse $lay h$h $be" >> "$L"
  MLA_CUPY_BACKEND=$be bench . "--batch-size 128 --num-heads $h --q-len 1 --cache-len 32768 --layout $lay --sparse-topk 2048 --mask null" >> "$L"
done; done; done
