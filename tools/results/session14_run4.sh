#!/usr/bin/env bash
# Session 14, call 4: the peers beside HEAD on the rows whose kernels changed this session
# (the narrow kernel: walk in shared memory, two math warpgroups at 32 rows), then, if time
# is left, next_shares_first_loads.patch checked and timed (prediction -1 us on segment rows).
set -u
T0=$SECONDS
COMMIT=${COMMIT:?} OUT=$OUT bash tools/gpu_bench.sh b128_h16_s8192 b8_h16_s8192 ds_h16_sq1_ragged \
  ds_h16_sq1_uniform ds_h32_sq1_ragged ds_h32_sq1_uniform ds_h16_sq2_ragged --repeats 30 > /dev/null 2>&1
echo "[t=$((SECONDS-T0))s] peers exit $?" >> $OUT/bench.log
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/sf.txt; : > "$L"
if [ $((SECONDS-T0)) -lt 300 ]; then
  rm -rf /tmp/sf && cp -r . /tmp/sf && cd /tmp/sf && git apply tools/results/next_shares_first_loads.patch || exit 0
  timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
    -k "segment_mode or independent" > $OUT/sf_tests.txt 2>&1
  echo "[t=$((SECONDS-T0))s] sf tests exit $? $(tail -1 $OUT/sf_tests.txt)" >> "$L"
  if grep -q "passed" $OUT/sf_tests.txt && ! grep -q "failed\|error" $OUT/sf_tests.txt && [ $((SECONDS-T0)) -lt 430 ]; then
    for d in /tmp/sf "$OLDPWD" /tmp/sf "$OLDPWD"; do
      echo "== $d" >> "$L"; (cd $d && timeout 40 python3 tools/bench.py ds_h16_sq1_ragged ds_h16_sq1_uniform b8_h16_s8192 \
        --repeats 20 --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-100) >> "$L"
    done
  fi
fi
tail -40 $OUT/bench.log; cat "$L"
