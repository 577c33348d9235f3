#!/usr/bin/env bash
# Session 23, call 2.  Device, repository root, .whl carried:
#   OUT=$OUT bash tools/results/session23_call2.sh
# 1. The slot bits (d6033de) under auto: GPU sparse / fp8 / hardening files and memcheck.
# 2. The pair's split counts on small batches (the model counts 32-key tiles of 1.5 us;
#    the pair's are 64 slots of ~2.7 us; call 1: b2 s_q2 P=8 26.9 against the chosen 13's 28.8).
# 3. A pair CTA's fixed cost: one wave of 66 clusters over 32 / 64 / 128 tiles, two waves
#    of 32 (P=1).  Prediction: ~2.6 us a tile; the second wave's CTA 3-6 us over 32 tiles.
# 4. b2 s_q2's kernels under ncu, ours and FlashMLA's (decode against combine).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 100 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
for f in sparse fp8 hardening; do
  PYTHONPATH=.:tests timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$f.py > /tmp/t_$f.log 2>&1
  echo "[$f exit $?]" >> /tmp/t_$f.log; say "$f: $(tail -2 /tmp/t_$f.log | tr '\n' ' ')"
done
PYTHONPATH=. timeout 40 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py \
  > /tmp/memcheck.log 2>&1; say "memcheck exit $?: $(grep -h 'ERROR SUMMARY\|cases done' /tmp/memcheck.log | tr '\n' ' ')"
S=sparse_ds_mla
PYTHONPATH=.:tests timeout 150 python3 tools/split_sweep.py ${S}_b1_sq1_h128:4,8,16,22,32 \
  ${S}_b2_sq1_h128:4,8,11,16,22 ${S}_b2_sq2_h128:4,6,8,11,16 ${S}_b4_sq2_h128:2,4,6,8,11 \
  ${S}_b8_sq2_h128:1,2,3,4,6 ${S}_b16_sq2_h128:1,2,3,4 ${S}_b32_sq2_h128:1,2,3 >> "$L" 2>&1; say "sweep $?"
PYTHONPATH=.:tests timeout 100 python3 tools/split_sweep.py ${S}_b66_sq1_h128:1 ${S}_b66_sq1_h128_top4096:1 \
  ${S}_b66_sq1_h128_top8192:1 ${S}_b132_sq1_h128:1 ${S}_b198_sq1_h128:1 >> "$L" 2>&1; say "fixed $?"
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl > /dev/null 2>&1
PYTHONPATH=.:/tmp/site timeout 100 python3 tools/kernel_times.py ${S}_b2_sq2_h128 --calls 10 >> "$L" 2>&1; say "ncu ours $?"
PYTHONPATH=.:/tmp/site timeout 100 python3 tools/kernel_times.py ${S}_b2_sq2_h128 --calls 10 --peer flashmla >> "$L" 2>&1
say "ncu flashmla $?"
cat "$L"
