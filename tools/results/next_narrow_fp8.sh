#!/usr/bin/env bash
# Prepared in session 11 (CPU-checked only): the narrow kernel over dense fp8 / fp8_ds_mla
# (tools/results/next_narrow_fp8.patch).  A producer warpgroup bulk-copies each 64-key
# tile's records (one copy per run inside a page) into a raw buffer, reads its share into
# registers (key p % 64, latent half p / 64 and its two group scales, four rope pieces),
# frees the buffer for the next tile's copies, and dequantises into the 8 KiB column-chunk
# slots the narrow math reads (20 slots beside fp8_ds_mla's raw buffer, 21 beside fp8's).
# Forced only (MLA_CUPY_HOPPER_SCHEDULE=narrow; auto keeps the ring / portable until this
# is measured).  Registers 254 (ds_mla) / 222 (fp8), no spills, no local memory.
# Prediction: the narrow math alone does 61 keys/us/SM, the ring's producer alone ~29
# (session 11 run 3), so the kernel is producer-bound: fp8_ds_mla b128 h16 369 -> ~270-290
# us, fp8 h16 400 (portable) -> ~270-290.  Target (issue 9): 183 / 161.
# Usage (device, repository root): OUT=$OUT bash tools/results/next_narrow_fp8.sh  (timeout 600)
#   SPARSE=1: also next_narrow_sparse.patch (applies on top; sparse fp8 / fp8_ds_mla on the
#   narrow kernel: a bulk copy per key, each key's token interval beside the tile; 255
#   registers for ds_mla, no spills; common/keys.cuh.j2 takes key_tokens from the ring,
#   whose SASS stays byte-identical).  Prediction: sparse ds_mla b128 h16 108 -> ~70-80 us
#   (the gathered bytes at 85% of copy bandwidth: 48 us; the producer bounds it).
#   M32=1 (with SPARSE=1): also next_narrow_m32.patch: the narrow kernel's 32-row tile (wgmma
#   N = 32) for row groups of 17-32 rows, forced only (auto keeps 16).  bf16 m32: 243
#   registers, 23 slots.  Prediction: ds_h32_sq1 and ds_h16_sq2 (ring, padded x2) ~10% faster.
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"
rm -rf /tmp/pn && cp -r . /tmp/pn && (cd /tmp/pn && git apply tools/results/next_narrow_fp8.patch \
  && if [ "${SPARSE:-0}" = 1 ]; then git apply tools/results/next_narrow_sparse.patch; fi \
  && if [ "${M32:-0}" = 1 ]; then git apply tools/results/next_narrow_m32.patch; fi) \
  || { echo "apply failed" >> "$L"; cat "$L"; exit 0; }
cd /tmp/pn
timeout 150 python3 tools/hopper_check.py --schedule narrow > $OUT/check.txt 2>&1; echo "[exit $?]" >> $OUT/check.txt
grep "correctness\|exit\|^FAIL" $OUT/check.txt | head >> "$L"
grep -q "^\[exit 0\]" $OUT/check.txt || { cat "$L"; exit 0; }
timeout 60 python3 tools/warm_kernel_cache.py > /dev/null 2>&1
timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_dense.py tests/test_gpu_sparse.py \
  -k narrow > $OUT/tests.txt 2>&1; echo "[tests exit $?]" >> $OUT/tests.txt
tail -2 $OUT/tests.txt >> "$L"
C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192"
[ "${SPARSE:-0}" = 1 ] && C="$C sparse_ds_mla_b128_sq1_h16"
[ "${M32:-0}" = 1 ] && C="$C ds_h32_sq1_uniform ds_h16_sq2_uniform"
for r in 1 2; do
  echo "== auto (ring / portable)" >> "$L"
  timeout 80 python3 tools/bench.py $C --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"
  echo "== narrow" >> "$L"
  MLA_CUPY_HOPPER_SCHEDULE=narrow MLA_CUPY_BACKEND=hopper timeout 80 python3 tools/bench.py $C --repeats 20 \
    --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"
done
(timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -m gpu -q -p no:cacheprovider \
   tests/test_gpu_dense.py -k "narrow_schedule_fp8 and 16 and causal" 2>&1 | tail -3) >> "$L"
cat "$L"
