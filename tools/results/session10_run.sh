#!/usr/bin/env bash
# Session 10's device calls (2026-12-01).  The tree carried holds 59b67d3 (PageDiv, measured)
# plus next_bulk_runs_dense.patch applied (one bulk copy per run of consecutive records,
# dense fp8 producers only; sparse SASS byte-identical).  /tmp/base = the tree with it reversed.
# Usage (device machine, repository root; carry .whl; timeout 600):
#   PHASE=br OUT=$OUT bash tools/results/session10_run.sh
#       hopper_check on the tree; base vs tree twice on the dense fp8 rows; plain fp8 h16 on
#       both families (is the 32-row rule still right once PageDiv sped both up?); the fp8
#       GPU tests on the tree; then issue 8's L2 question (ncu SpeedOfLight and
#       MemoryWorkloadAnalysis of our b128 h128 seesaw and FlashMLA's kernel)  (~8 min)
#   PHASE=final COMMIT=<sha> OUT=$OUT bash tools/results/session10_run.sh
#       the committed tree: warm the kernel cache, the fp8 GPU tests (the br call's 200 s ran
#       out compiling cold), then the README's tables beside both peers: --suite default
#       (issue 8 + issue 9) and the dense fp8 rows  (~8 min)
#   PHASE=two OUT=$OUT bash tools/results/session10_run.sh
#       the tree holds next_two_producers.patch (fp8 layouts: two producer warpgroups of
#       128 threads, 512 a CTA, P V as two n128 wgmma; small spills); /tmp/base = HEAD.
#       hopper_check, base vs tree on the fp8 rows, the fp8 and sparse GPU tests, and the
#       producer ceilings of both  (~7 min)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
if [ "${PHASE:-br}" = final ]; then
  timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"
  timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_fp8.py > $OUT/tests.txt 2>&1; echo "[fp8 exit $?]" >> $OUT/tests.txt
  tail -2 $OUT/tests.txt >> "$L"
  timeout 200 bash tools/gpu_bench.sh --suite default --repeats 30 > /dev/null 2>&1; echo "[default exit $?]" >> "$L"
  OUT=$OUT/fp8 timeout 120 bash tools/gpu_bench.sh fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192 fp8_b128_h128_s8192 \
    fp8_ds_mla_b128_h128_s8192 --repeats 30 > /dev/null 2>&1; echo "[fp8 bench exit $?]" >> "$L"
  exit 0
fi
if [ "${PHASE:-br}" = two ]; then
  rm -rf /tmp/base && cp -r . /tmp/base && (cd /tmp/base && git apply -R tools/results/next_two_producers.patch) || echo "base: reverse failed" >> "$L"
  (cd /tmp/base && timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
  timeout 170 python3 tools/hopper_check.py > $OUT/check.txt 2>&1; echo "[exit $?]" >> $OUT/check.txt
  wait
  grep "correctness:\|exit\|^FAIL" $OUT/check.txt | head >> "$L"
  grep -q "^\[exit 0\]" $OUT/check.txt || exit 0
  bench() { (cd $1 && timeout 150 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110); }
  S="fp8_ds_mla_b128_h16_s8192 fp8_ds_mla_b128_h128_s8192 fp8_b128_h128_s8192 sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64"
  for t in /tmp/base . ; do echo "== $t" >> "$L"; bench $t "$S" >> "$L"; done
  for n in fp8 sparse; do
    timeout 100 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $OUT/tests_$n.txt 2>&1; echo "[$n exit $?]" >> $OUT/tests_$n.txt
    tail -2 $OUT/tests_$n.txt >> "$L"
  done
  for t in /tmp/base .; do echo "== ceiling $t" >> "$L"
    (cd $t && timeout 60 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 fp8_ds_mla_b128_h16_s8192) >> "$L" 2>&1; done
  exit 0
fi
rm -rf /tmp/base && cp -r . /tmp/base && (cd /tmp/base && git apply -R tools/results/next_bulk_runs_dense.patch) || echo "base: reverse failed" >> "$L"
bench() { (cd $1 && timeout 150 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110); }
timeout 150 python3 tools/hopper_check.py > $OUT/check.txt 2>&1; echo "[exit $?]" >> $OUT/check.txt
grep "correctness:\|exit\|^FAIL" $OUT/check.txt | head >> "$L"
S="fp8_ds_mla_b128_h16_s8192 fp8_ds_mla_b128_h128_s8192 fp8_b128_h128_s8192 sparse_ds_mla_b128_sq1_h128"
for t in /tmp/base . /tmp/base .; do echo "== $t" >> "$L"; bench $t "$S" >> "$L"; done
F16="--batch-size 128 --num-heads 16 --q-len 1 --cache-len 8192 --layout fp8"
for b in portable hopper; do echo "== fp8 h16 $b" >> "$L"; MLA_CUPY_BACKEND=$b bench . "$F16" >> "$L"; done
timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_fp8.py > $OUT/tests.txt 2>&1; echo "[fp8 exit $?]" >> $OUT/tests.txt
tail -2 $OUT/tests.txt >> "$L"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl \
  && export PYTHONPATH=/tmp/site:$PYTHONPATH
for k in "mla_decode -s 2 -c 1" "flash -c 6"; do echo "== ncu $k" >> "$L"
  timeout 120 ncu --clock-control none -k regex:$k --section SpeedOfLight --section MemoryWorkloadAnalysis \
    python3 tools/bench.py b128_h128_s8192 --peer flashmla --repeats 20 --check-seqs 1 > $OUT/ncu_${k%% *}.txt 2>&1
  grep -E "^  [a-zA-Z_].*\(|Duration|L2 Cache Throughput|DRAM Throughput|L2 Hit Rate|Memory Throughput|Compute \(SM\)|Mem Busy|Max Bandwidth|L1/TEX Hit|Mem Pipes" \
    $OUT/ncu_${k%% *}.txt | head -40 >> "$L"
done
