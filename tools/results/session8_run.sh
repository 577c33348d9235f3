#!/usr/bin/env bash
# Device calls of 2026-12-01 (eighth session), after the four prepared patches landed
# (bbff1b4 raw cp.async, 3aeda8b pair, d1ea546 index after release, 506374d dense ds_mla producer).
#   PHASE=verify  hopper_check of the pair (full list), every GPU test file, the dense/sparse/fp8
#                 ones again forced onto the portable kernels, memcheck (now with a pair case and
#                 a dense fp8_ds_mla case)
#   PHASE=bench   the sparse suite beside FlashMLA (.whl carried), then the tree before the
#                 four patches (reverse-applied) beside this one on the same cases
#   PHASE=final   after the reverts (ff84093): checks, tests, memcheck, the sparse suite
#   PHASE=pairbulk  the pair on bulk copies: checked, timed beside HEAD, profiled; issue 8's probe
#   PHASE=fp8     the fp8 suite, the producer's ceiling, the dense producer's stall samples
# (a record of the calls: the patches it names are now 2026-12-01e_dropped_*.patch, or landed)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
if [ "${PHASE}" = verify ]; then
  timeout 150 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"
  w=/tmp/w; mkdir -p $w
  ( timeout 240 python3 tools/hopper_check.py --schedule pair > $w/check_pair.log 2>&1; echo "[exit $?]" >> $w/check_pair.log ) &
  for f in tests/test_gpu_*.py; do n=$(basename $f .py)
    ( timeout 360 python3 -m pytest -m gpu -q -p no:cacheprovider $f > $w/$n.log 2>&1; echo "[$n exit $?]" >> $w/$n.log ) &
  done
  for n in dense sparse fp8; do
    ( MLA_CUPY_BACKEND=portable timeout 360 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_$n.py \
        > $w/portable_$n.log 2>&1; echo "[portable $n exit $?]" >> $w/portable_$n.log ) &
  done
  wait
  for f in $w/*.log; do echo "== $(basename $f)"; tail -3 $f; done >> "$L"
  ( timeout 200 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tail -3 ) >> "$L"
  cat $w/*.log > $OUT/all.txt
  exit 0
fi
if [ "${PHASE}" = final ]; then
  # after the reverts: the dense producer on bulk copies; tests that touch the ring, memcheck, bench
  timeout 150 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"
  w=/tmp/w; mkdir -p $w
  ( timeout 200 python3 tools/hopper_check.py --quick > $w/check.log 2>&1; echo "[exit $?]" >> $w/check.log ) &
  for n in dense sparse fp8 hardening; do
    ( timeout 300 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_$n.py > $w/$n.log 2>&1; echo "[$n exit $?]" >> $w/$n.log ) &
  done
  wait
  for f in $w/*.log; do echo "== $(basename $f)"; grep "correctness:" $f; tail -2 $f; done >> "$L"
  ( timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tail -2 ) >> "$L"
  cat $w/*.log > $OUT/all.txt
  OUT=$OUT timeout 200 bash tools/gpu_bench.sh --suite sparse --repeats 30 > /dev/null 2>&1
  grep -v "^#" $OUT/bench.log | cut -c1-160 >> "$L"
  for c in "--num-heads 16" "--num-heads 128"; do
    timeout 60 python3 tools/bench.py --batch-size 128 $c --q-len 1 --cache-len 8192 --layout fp8_ds_mla --repeats 20 \
      2>&1 | grep -v "^#" | cut -c1-120 >> "$L"; done
  exit 0
fi
if [ "${PHASE}" = bench ]; then
  rm -rf /tmp/old && cp -r . /tmp/old
  for p in next_dense_ds_mla_producer_on_pair next_index_after_release_on_pair next_pair_schedule next_raw_cp_async; do
    (cd /tmp/old && git apply -R tools/results/$p.patch) || echo "old: -R $p failed" >> "$L"
  done
  OUT=$OUT timeout 300 bash tools/gpu_bench.sh --suite sparse --repeats 30 > /dev/null 2>&1
  grep -v "^#" $OUT/bench.log | cut -c1-160 >> "$L"
  bench() { (cd $1 && timeout 100 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-120); }
  S="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b128_sq1_h64"
  BF="--batch-size 128 --num-heads 128 --q-len 1 --cache-len 32768 --layout bf16 --sparse-topk 2048"
  D16="--batch-size 128 --num-heads 16 --q-len 1 --cache-len 8192 --layout fp8_ds_mla"
  D128="--batch-size 128 --num-heads 128 --q-len 1 --cache-len 8192 --layout fp8_ds_mla"
  for t in /tmp/old .; do echo "== $t" >> "$L"
    bench $t "$S" >> "$L"; bench $t "$BF" >> "$L"; bench $t "$D16" >> "$L"; bench $t "$D128" >> "$L"; done
  timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_sparse.py -k pair 2>&1 | tail -2 >> "$L"
  exit 0
fi
if [ "${PHASE}" = pairbulk ]; then
  # the pair schedule on HEAD's bulk copies: checked, timed beside HEAD, profiled; issue 8's probe
  rm -rf /tmp/pb && cp -r . /tmp/pb && (cd /tmp/pb && git apply tools/results/next_pair_schedule_bulk.patch) || echo "pb: apply failed" >> "$L"
  (cd /tmp/pb && timeout 150 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L"
  (cd /tmp/pb && { timeout 90 python3 tools/hopper_check.py --schedule pair; echo "[exit $?]"; } > $OUT/check_pb.txt 2>&1)
  grep "correctness\|exit" $OUT/check_pb.txt >> "$L"
  if grep -q "correctness: 0 failures" $OUT/check_pb.txt; then
    (cd /tmp/pb && timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_sparse.py tests/test_gpu_fp8.py 2>&1 | tail -2) >> "$L"
    (cd /tmp/pb && timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tail -1) >> "$L"
    for t in . /tmp/pb . /tmp/pb; do echo "== $t" >> "$L"; (cd $t && timeout 100 python3 tools/bench.py sparse_ds_mla_b128_sq1_h128 \
      sparse_ds_mla_b128_sq2_h128 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100) >> "$L"; done
    echo "== hotspots pair (bulk)" >> "$L"
    (cd /tmp/pb && timeout 150 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse --top 16 --out /tmp/pb) >> "$L" 2>&1
    gzip -c /tmp/pb/hotspots_source.csv > $OUT/hotspots_pair_bulk.csv.gz
  fi
  echo "== pair probe per warp (issue 8)" >> "$L"; timeout 60 python3 tools/phase_probe.py --pair 3 --per-warp >> "$L" 2>&1
  exit 0
fi
if [ "${PHASE}" = fp8 ]; then
  # issue 9's dense fp8 rows beside bf16 (peers on the bf16 rows), the producer's ceiling
  # (wgmmas removed) on sparse and dense fp8_ds_mla, and the dense producer's stall samples
  OUT=$OUT timeout 240 bash tools/gpu_bench.sh --suite fp8 --repeats 30 > /dev/null 2>&1
  grep -v "^#" $OUT/bench.log | cut -c1-170 >> "$L"
  echo "== producer ceiling" >> "$L"
  timeout 150 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 \
    fp8_ds_mla_b128_h16_s8192 fp8_ds_mla_b128_h128_s8192 >> "$L" 2>&1
  echo "== hotspots dense ds_mla h16" >> "$L"
  timeout 120 python3 tools/ncu_hotspots.py fp8_ds_mla_b128_h16_s8192 ds_mla_causal_dense --top 24 --out /tmp >> "$L" 2>&1
  gzip -c /tmp/hotspots_source.csv > $OUT/hotspots_dense_ds_mla.csv.gz
  exit 0
fi
if [ "${PHASE}" = fp8hopper ]; then
  # plain fp8 (bf16 queries) on the Hopper ring with the producer: check, tests, bench, memcheck
  timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"
  w=/tmp/w; mkdir -p $w
  ( timeout 150 python3 tools/hopper_check.py --schedule ring > $w/check.log 2>&1; echo "[exit $?]" >> $w/check.log ) &
  for n in fp8 sparse hardening; do
    ( timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $w/$n.log 2>&1; echo "[$n exit $?]" >> $w/$n.log ) &
  done
  ( MLA_CUPY_BACKEND=portable timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_fp8.py \
      > $w/portable_fp8.log 2>&1; echo "[portable fp8 exit $?]" >> $w/portable_fp8.log ) &
  wait
  for f in $w/*.log; do echo "== $(basename $f)"; grep "correctness:\|^FAIL" $f | head -5; tail -2 $f; done >> "$L"
  cat $w/*.log > $OUT/all.txt
  if grep -q "correctness: 0 failures" $w/check.log; then
    OUT=$OUT timeout 120 bash tools/gpu_bench.sh --suite fp8 --repeats 20 > /dev/null 2>&1
    grep -v "^#" $OUT/bench.log | cut -c1-150 >> "$L"
    ( timeout 80 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tail -2 ) >> "$L"
  fi
  exit 0
fi
