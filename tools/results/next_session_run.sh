#!/usr/bin/env bash
# One device call for the two patches prepared on 2026-12-01 (seventh session), each on
# HEAD in its own copy (they touch the same template: combined, apply the second with
# `git apply --3way` after committing the first):
#   next_pair_schedule.patch         sparse fp8_ds_mla at 128·k heads: two CTAs of a cluster,
#                                    each dequantising half of every tile into both
#   next_dense_ds_mla_producer.patch dense fp8_ds_mla on the producer warpgroup with bulk copies
#   next_index_after_release.patch   the sparse producers load indices after publishing a tile
#                                    (conflicts with the pair patch's loop: merge by hand)
# NOTES.md has each design and its prediction.  Correctness first, with short timeouts (a
# hang shows as a timeout of a check), then each timed beside HEAD in the same run, then
# where the time goes (HEAD's sparse ds_mla kernel, and the pair's).
# Usage (device machine, repository root; .whl not needed):
#   OUT=$OUT bash tools/results/next_session_run.sh     (about 8 minutes; run it with timeout_s 600)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"
declare -A PATCH=([pair]=next_pair_schedule.patch [dense]=next_dense_ds_mla_producer.patch
                  [index]=next_index_after_release.patch)
for v in pair dense index; do
  p=${PATCH[$v]}
  rm -rf /tmp/$v && cp -r . /tmp/$v && (cd /tmp/$v && git apply tools/results/$p) || echo "$v: patch failed" >> "$L"
done
(timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_head.txt 2>&1) &
(cd /tmp/pair && timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_pair.txt 2>&1) &
(cd /tmp/dense && timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_dense.txt 2>&1) &
(cd /tmp/index && timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_index.txt 2>&1) &
wait
tail -qn1 /tmp/warm_head.txt /tmp/warm_pair.txt /tmp/warm_dense.txt /tmp/warm_index.txt >> "$L"
# correctness, both trees side by side (most of it is NVRTC on the CPU; the GPU work is small)
(cd /tmp/pair && { timeout 90 python3 tools/hopper_check.py --schedule pair; echo "[exit $?]";
   timeout 90 python3 tools/hopper_check.py --quick --schedule ring; echo "[exit $?]"; } > /tmp/check_pair.txt 2>&1) &
(cd /tmp/dense && { timeout 150 python3 tools/hopper_check.py --schedule ring; echo "[exit $?]"; } \
   > /tmp/check_dense.txt 2>&1) &
(cd /tmp/index && { timeout 90 python3 tools/hopper_check.py --quick --schedule ring; echo "[exit $?]"; } \
   > /tmp/check_index.txt 2>&1) &
wait
ok() { grep -q "correctness: 0 failures" /tmp/check_$1.txt && ! grep -q "\[exit [1-9]" /tmp/check_$1.txt; }
for v in pair dense index; do echo "== check $v: $(grep -h 'correctness:\|\[exit' /tmp/check_$v.txt | tr '\n' ' ')" >> "$L"; done
ok pair && (cd /tmp/pair && timeout 200 python3 -m pytest -m gpu tests/test_gpu_sparse.py tests/test_gpu_fp8.py -q \
   -p no:cacheprovider 2>&1 | tail -2) >> "$L"
ok dense && (cd /tmp/dense && timeout 200 python3 -m pytest -m gpu tests/test_gpu_fp8.py tests/test_gpu_dense.py -q \
   -k "fp8 or longest" -p no:cacheprovider 2>&1 | tail -2) >> "$L"
ok pair && (cd /tmp/pair && timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/memcheck_sparse.py 2>&1 | tail -1) >> "$L"
bench() { (cd $1 && timeout 150 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-120); }
S="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128"
D16="--batch-size 128 --num-heads 16 --q-len 1 --cache-len 8192 --layout fp8_ds_mla"
D128="--batch-size 128 --num-heads 128 --q-len 1 --cache-len 8192 --layout fp8_ds_mla"
for tree in . /tmp/pair . /tmp/pair; do
  [ "$tree" = /tmp/pair ] && ! ok pair && continue
  echo "== bench $tree (sparse)" >> "$L"; bench $tree "$S" >> "$L"
done
BF="--batch-size 128 --num-heads 128 --q-len 1 --cache-len 32768 --layout bf16 --sparse-topk 2048"
for tree in . /tmp/index . /tmp/index; do
  [ "$tree" = /tmp/index ] && ! ok index && continue
  echo "== bench $tree (sparse bf16, ds_mla h128)" >> "$L"; bench $tree "$BF" >> "$L"
  bench $tree "sparse_ds_mla_b128_sq1_h128" >> "$L"
done
for tree in . /tmp/dense; do
  [ "$tree" = /tmp/dense ] && ! ok dense && continue
  echo "== bench $tree (dense ds_mla h16, h128)" >> "$L"; bench $tree "$D16" >> "$L"; bench $tree "$D128" >> "$L"
done
echo "== bench . (dense bf16 h16: the 656/1152 target's base)" >> "$L"; bench . "b128_h16_s8192" >> "$L"
# where the time goes: HEAD's sparse ring and the pair, ds_mla b128 s_q1 h128
echo "== hotspots HEAD" >> "$L"
timeout 120 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse --top 16 --out /tmp >> "$L" 2>&1
gzip -c /tmp/hotspots_source.csv > $OUT/hotspots_head.csv.gz
if ok pair; then
  echo "== hotspots pair" >> "$L"
  (cd /tmp/pair && timeout 120 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse \
     --top 16 --out /tmp/pair) >> "$L" 2>&1
  gzip -c /tmp/pair/hotspots_source.csv > $OUT/hotspots_pair.csv.gz
fi
cat /tmp/check_pair.txt /tmp/check_dense.txt /tmp/check_index.txt > $OUT/checks.txt
