#!/usr/bin/env bash
# Session 9's last device call (H200; carry .whl; timeout 600): the working tree's
# row rule (compiler.hopper_min_rows: sparse from 16 rows, dense fp8 from 32) under the
# GPU tests; issue 8's seesaw patch (now 2026-12-01f_dropped_seesaw_wg1_a_first.patch) checked and timed beside the tree;
# and the crossover under 16 rows (h8, h4) that the rule leaves to the portable kernels.
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; w=/tmp/w; mkdir -p $w
rm -rf /tmp/ss && cp -r . /tmp/ss && (cd /tmp/ss && git apply tools/results/2026-12-01f_dropped_seesaw_wg1_a_first.patch) || echo "ss: apply failed" >> "$L"
(timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
(cd /tmp/ss && timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
wait
for n in sparse fp8 hardening; do
  (timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$n.py > $w/$n.log 2>&1; echo "[$n exit $?]" >> $w/$n.log) &
done
(cd /tmp/ss && timeout 120 python3 tools/hopper_check.py --schedule seesaw > $w/check_ss.log 2>&1; echo "[exit $?]" >> $w/check_ss.log) &
(cd /tmp/ss && timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py > $w/dense_ss.log 2>&1; echo "[dense ss exit $?]" >> $w/dense_ss.log) &
wait
for n in sparse fp8 hardening dense_ss; do echo "== $n"; tail -2 $w/$n.log; done >> "$L"
grep "correctness:\|exit\|^FAIL" $w/check_ss.log | head | sed 's/^/ss: /' >> "$L"
cat $w/*.log > $OUT/tests.txt
bench() { (cd $1 && timeout 120 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110); }
C="b128_h128_s8192 b128_sq2_h128_varlen_causal b1_h128_s65536 b32_h128_s4096"
if grep -q "correctness: 0 failures" $w/check_ss.log; then
  for t in . /tmp/ss . /tmp/ss; do echo "== seesaw $t" >> "$L"; bench $t "$C" >> "$L"; done
  (cd /tmp/ss && timeout 60 python3 tools/phase_probe.py --pair 3 --per-warp) > $OUT/probe_ss.txt 2>&1
fi
for h in 8 4; do for lay in fp8_ds_mla bf16; do for be in portable hopper; do
  echo "== sparse $lay h$h $be" >> "$L"
  MLA_CUPY_BACKEND=$be bench . "--batch-size 128 --num-heads $h --q-len 1 --cache-len 32768 --layout $lay --sparse-topk 2048 --mask null" >> "$L"
done; done; done
for be in portable hopper; do echo "== dense fp8_ds_mla h8 $be" >> "$L"
  MLA_CUPY_BACKEND=$be bench . "--batch-size 128 --num-heads 8 --q-len 1 --cache-len 8192 --layout fp8_ds_mla" >> "$L"; done
