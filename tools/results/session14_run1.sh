#!/usr/bin/env bash
# Session 14, call 1: (a) HEAD's segment-mode tests after test_independent (covers the
# shared_scalar_args memo fix 392c77f on the GPU); (b) next_narrow_walk_smem (prediction:
# times unchanged, no spill); (c) next_narrow_ot_behind_st on walk (prediction: ds_h32 ragged
# 235 -> ~215, ds_h16 ragged 184 -> ~178, b128 h16 within 2 us).
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
C="ds_h32_sq1_ragged ds_h16_sq1_ragged ds_h16_sq1_uniform ds_h16_sq2_ragged b128_h16_s8192 b8_h16_s8192 b32_h128_s4096"
bench() { timeout 90 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"; }
rm -rf /tmp/pw /tmp/po && cp -r . /tmp/pw && cp -r . /tmp/po
(cd /tmp/pw && git apply tools/results/next_narrow_walk_smem.patch) || { say "walk apply failed"; cat "$L"; exit 0; }
(cd /tmp/po && git apply tools/results/next_narrow_walk_smem.patch && git apply tools/results/next_narrow_ot_behind_st_on_walk.patch) || { say "ot apply failed"; cat "$L"; exit 0; }
timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm HEAD"
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py -k "independent or segment_mode" > $OUT/head_tests.txt 2>&1
say "HEAD tests exit $? $(tail -1 $OUT/head_tests.txt)"
echo "== HEAD" >> "$L"; bench; say "bench HEAD"
for t in pw po; do
  cd /tmp/$t
  timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "$t warm"
  timeout 60 python3 tools/hopper_check.py --schedule narrow > $OUT/${t}_check.txt 2>&1; say "$t check exit $?"
  grep "correctness\|^FAIL" $OUT/${t}_check.txt | head -3 >> "$L"
  timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py tests/test_gpu_sparse.py \
    -k "narrow or segment_mode or longest_first or independent" > $OUT/${t}_tests.txt 2>&1
  say "$t tests exit $? $(tail -1 $OUT/${t}_tests.txt)"
  grep -q "passed" $OUT/${t}_tests.txt && ! grep -q "failed" $OUT/${t}_tests.txt || continue
  echo "== $t" >> "$L"; bench; say "bench $t"
done
cat "$L"
