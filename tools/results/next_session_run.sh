#!/usr/bin/env bash
# Device calls for the patches prepared on 2026-12-01 (session 9), each CPU-checked, none run on a GPU:
#   fd  next_fast_page_div.patch  the loaders' page / slot by multiply-high (PageDiv), a row one
#                                 multiply-add: every decode family (kernels/common/keys.cuh.j2)
#   la  next_raw_ahead2.patch     the fp8 producer's bulk copies two tiles ahead (RAW_AHEAD = 2)
#   br  next_bulk_runs.patch      one bulk copy per run of consecutive records (a dense tile: one a warp)
#   st  next_producer_stack.patch the three together (fd, then la, then br)
#   fm  next_register_loads.patch the fp8 producer loads its key's share into registers at the start
#                                 of each tile (8 keys x 64 B a load, L2::256B prefetch hint, no
#                                 lookahead, no bulk copy: FlashMLA's way, NOTES.md session 9)
# Usage (device machine, repository root; carry .whl; timeout_s 600 each):
#   PHASE=check OUT=$OUT bash tools/results/next_session_run.sh
#       the stack: hopper_check (both schedules; a hang shows as its timeout), every decode GPU
#       test file on the default families and dense / sparse / fp8 forced portable, memcheck; and
#       fm: hopper_check --schedule ring, its fp8 / sparse tests (memcheck once it wins) (~8 min)
#   PHASE=bench OUT=$OUT bash tools/results/next_session_run.sh
#       HEAD, fd, la, br and st side by side, twice, on the fp8 and sparse rows (each row is
#       checked against the reference first), the sparse_more suite on HEAD and the stack, and
#       the producer ceilings (~8 min)
#   PHASE=l2 OUT=$OUT bash tools/results/next_session_run.sh
#       issue 8: is the dense h128 seesaw bound by L2's output?  One launch each of ours and
#       FlashMLA's kernel at b128 h128 s8192 under ncu: L2 throughput % of peak, hit rate,
#       bytes into the SMs, DRAM %, tensor pipe %.  At 530 us the SMs take in 4.6 TB/s of
#       cache rows (two CTAs a sequence each read all of it), FlashMLA's 5.3 TB/s at 460 us;
#       if L2's throughput is near its peak there, a two-CTA cluster loading each tile once
#       by TMA multicast is the lever (NOTES.md session 9) (~2 min)
#   PHASE=why OUT=$OUT bash tools/results/next_session_run.sh
#       issue 9: why the register producers lost (session 9; predicted faster, measured 232 -> 287 us):
#       ncu WarpStateStats and SourceCounters of one launch of the dropped coalesced patch's sparse
#       ds_mla h128 kernel beside HEAD's, exported as CSV (the producer's stall reasons by SASS line)
#       (~3 min)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
if [ "${PHASE:-check}" = why ]; then
  L=$OUT/log.txt; : > "$L"
  rm -rf /tmp/co && cp -r . /tmp/co && (cd /tmp/co && git apply tools/results/2026-12-01f_dropped_coalesced_producer.patch) || echo "co: apply failed" >> "$L"
  for t in . /tmp/co; do n=$([ $t = . ] && echo head || echo co); mkdir -p /tmp/hs_$n; echo "== $n" >> "$L"
    (cd $t && timeout 200 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse --top 24 \
      --out /tmp/hs_$n) >> "$L" 2>&1
    gzip -c /tmp/hs_$n/hotspots_source.csv > $OUT/hotspots_$n.csv.gz
  done
  exit 0
fi
if [ "${PHASE:-check}" = l2 ]; then
  L=$OUT/log.txt; : > "$L"
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=/tmp/site:$PYTHONPATH
  for k in "mla_decode -s 2 -c 1" "flash -c 6"; do echo "== $k" >> "$L"
    timeout 250 ncu --clock-control none -k regex:$k --section SpeedOfLight --section MemoryWorkloadAnalysis \
      python3 tools/bench.py b128_h128_s8192 --peer flashmla --repeats 20 --check-seqs 1 > $OUT/ncu_${k%% *}.txt 2>&1
    grep -E "^  [a-zA-Z_].*\(|Duration|L2 Cache Throughput|DRAM Throughput|L2 Hit Rate|Memory Throughput|Compute \(SM\)|Mem Busy|Max Bandwidth" \
      $OUT/ncu_${k%% *}.txt | head -60 >> "$L"
  done
  exit 0
fi
L=$OUT/log.txt; : > "$L"; w=/tmp/w; mkdir -p $w
for t in fd:next_fast_page_div la:next_raw_ahead2 br:next_bulk_runs st:next_producer_stack fm:next_register_loads; do
  d=/tmp/${t%%:*}; rm -rf $d && cp -r . $d && (cd $d && git apply tools/results/${t#*:}.patch) || echo "$d: apply failed" >> "$L"
done
bench() { (cd $1 && timeout 120 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110); }
if [ "${PHASE:-check}" = check ]; then
  (cd /tmp/st && timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
  (cd /tmp/fm && timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
  wait
  (cd /tmp/fm && timeout 150 python3 tools/hopper_check.py --schedule ring > $OUT/check_fm.txt 2>&1; echo "[exit $?]" >> $OUT/check_fm.txt) &
  (cd /tmp/st && timeout 150 python3 tools/hopper_check.py > $OUT/check_st.txt 2>&1; echo "[exit $?]" >> $OUT/check_st.txt)
  wait
  grep "correctness:\|exit\|^FAIL" $OUT/check_fm.txt | head | sed 's/^/fm: /' >> "$L"
  if grep -q "^\[exit 0\]" $OUT/check_fm.txt; then
    for n in fp8 sparse; do
      (cd /tmp/fm && timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $w/fm_$n.log 2>&1; echo "[fm $n exit $?]" >> $w/fm_$n.log) &
    done
  fi
  grep "correctness:\|exit\|^FAIL" $OUT/check_st.txt | head >> "$L"
  grep -q "^\[exit 0\]" $OUT/check_st.txt || exit 0
  for n in fp8 sparse dense hardening; do
    (cd /tmp/st && timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $w/$n.log 2>&1; echo "[$n exit $?]" >> $w/$n.log) &
  done
  for n in fp8 sparse dense; do
    (cd /tmp/st && MLA_CUPY_BACKEND=portable timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $w/portable_$n.log 2>&1; echo "[portable $n exit $?]" >> $w/portable_$n.log) &
  done
  wait
  for f in $w/*.log; do echo "== $f"; tail -2 $f; done >> "$L"
  (cd /tmp/st && timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tail -2) >> "$L"
  cat $w/*.log > $OUT/tests.txt
  exit 0
fi
# PHASE=bench
S="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 fp8_ds_mla_b128_h16_s8192 fp8_ds_mla_b128_h128_s8192 fp8_b128_h128_s8192"
BF="--batch-size 128 --num-heads 128 --q-len 1 --cache-len 32768 --layout bf16 --sparse-topk 2048"
for t in . /tmp/fd /tmp/la /tmp/br /tmp/st /tmp/fm . /tmp/st /tmp/fm; do echo "== $t" >> "$L"; bench $t "$S" >> "$L"; done
for t in . /tmp/st; do echo "== bf16 sparse $t" >> "$L"; bench $t "$BF" >> "$L"; done
# issue 9's sparse rows no peer runs (mla-cupy bench --suite sparse_more, new in session 9: bf16 and
# fp8 caches, h32, folded s_q 2 / 4), never run on a GPU before: HEAD and the stack
for t in . /tmp/st; do echo "== sparse_more $t" >> "$L"; bench $t "--suite sparse_more" >> "$L"; done
for t in . /tmp/st /tmp/fm; do echo "== ceiling $t" >> "$L"
  (cd $t && timeout 120 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 fp8_ds_mla_b128_h16_s8192) >> "$L" 2>&1; done
