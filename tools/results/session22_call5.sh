#!/usr/bin/env bash
# Session 22, call 5.  Device, repository root:  OUT=$OUT bash tools/results/session22_call5.sh
# HEAD: the pair's producer with eight lanes a slot, two slots a thread: every store
# instruction writes four whole 128-byte lines here and in the peer (call 4, whole 32-byte
# sectors: 215.8 us; call 3's ablation with 64-byte runs: 199.8).
# Prediction: pair b128 h128 215.8 -> 195-200 us (twice the load instructions, 8 bytes each,
#   may give back ~3); ring unchanged (220).  Then the pair under auto
#   (session22_pair_auto.patch) through the GPU files and memcheck.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule pair > $OUT/check_pair.txt 2>&1
rc=$?; say "check pair exit $rc: $(grep -h 'correctness' $OUT/check_pair.txt)"
if [ $rc -ne 0 ]; then cat "$L"; grep FAIL $OUT/check_pair.txt | cut -c1-300; exit 1; fi
C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128"
for r in 1 2; do
  echo "== ring ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=ring PYTHONPATH=. BENCH_TIMEOUT=100 bench; say bench
  echo "== pair ($r)" >> "$L"; MLA_CUPY_HOPPER_SCHEDULE=pair PYTHONPATH=. BENCH_TIMEOUT=100 bench; say bench
done
MLA_CUPY_HOPPER_SCHEDULE=pair PYTHONPATH=.:tests timeout 150 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 \
  --ablate noconvert,noload+noconvert,nopeer,noload+noconvert+nopeer >> "$L" 2>&1; say "strip $?"
MLA_CUPY_HOPPER_SCHEDULE=pair PYTHONPATH=.:tests timeout 150 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 \
  --keep-mma --ablate noconvert,nopeer,noload+noconvert+nopeer >> "$L" 2>&1; say "keep-mma $?"
patched /tmp/auto session22_pair_auto.patch
cd /tmp/auto
for f in sparse hardening fp8; do
  PYTHONPATH=.:tests timeout 250 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$f.py > /tmp/t_$f.log 2>&1
  echo "[$f exit $?]" >> /tmp/t_$f.log; say "auto $f: $(tail -2 /tmp/t_$f.log | tr '\n' ' ')"
done
PYTHONPATH=. timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py \
  > /tmp/memcheck.log 2>&1; say "memcheck exit $?: $(grep -h 'ERROR SUMMARY\|cases done' /tmp/memcheck.log | tr '\n' ' ')"
cat "$L"
