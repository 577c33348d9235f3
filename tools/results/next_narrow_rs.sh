#!/usr/bin/env bash
# Prepared in session 12 (CPU-checked only): the narrow kernel's register-dequant form for
# dense fp8 / fp8_ds_mla at 16 rows (RS: wgmma's A built in registers straight from the
# records; one loader warp keeps 5 tiles of records in flight; no bf16 tile).
# 254 registers (fp8_ds_mla m16), 237-239 (fp8), no spills; bf16 narrow SASS unchanged.
# Prediction: fp8_ds_mla b128 h16 356 -> ~200-240 us, fp8 374 -> ~190-230 (target 183 / 161);
# rs_probe --rate 50-70 keys/us/SM.
# Usage (device, repository root): OUT=$OUT bash tools/results/next_narrow_rs.sh  (timeout 600)
#   ON_SEGMENTS=1: apply next_segments.patch, then next_narrow_rs_on_segments.patch
#   (else next_narrow_rs.patch alone, on HEAD).
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
timeout 60 python3 tools/rs_probe.py --rate >> "$L" 2>&1; echo "[rs_probe exit $?]" >> "$L"
rm -rf /tmp/pr && cp -r . /tmp/pr && (cd /tmp/pr && if [ "${ON_SEGMENTS:-0}" = 1 ]; then
    git apply tools/results/next_segments.patch && git apply tools/results/next_narrow_rs_on_segments.patch
  else git apply tools/results/next_narrow_rs.patch; fi) || { echo "apply failed" >> "$L"; cat "$L"; exit 0; }
cd /tmp/pr
timeout 90 python3 tools/warm_kernel_cache.py > /dev/null 2>&1
timeout 100 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; echo "[exit $?]" >> $OUT/check.txt
grep "correctness\|exit\|^FAIL" $OUT/check.txt | head >> "$L"
timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py tests/test_gpu_fp8.py \
  -k "narrow_schedule_fp8 or fp8" > $OUT/tests.txt 2>&1; echo "[tests exit $?]" >> $OUT/tests.txt
tail -3 $OUT/tests.txt >> "$L"
grep -q "^\[tests exit 0\]" $OUT/tests.txt || { cat "$L"; exit 0; }
C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192"
for r in 1 2; do
  echo "== narrow RS (auto)" >> "$L"
  timeout 50 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
  echo "== ring" >> "$L"
  MLA_CUPY_HOPPER_SCHEDULE=ring MLA_CUPY_BACKEND=hopper timeout 50 python3 tools/bench.py $C --repeats 20 \
    --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
done
(timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -m gpu -q -p no:cacheprovider \
   tests/test_gpu_dense.py -k "narrow_schedule_fp8 and 16 and causal" 2>&1 | tail -2) >> "$L"
cat "$L"
