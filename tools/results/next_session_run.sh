#!/usr/bin/env bash
# Two device calls for the patches prepared on 2026-12-01 (seventh session), each tree in its
# own copy of HEAD (combining them: commit one, apply the next with `git apply --3way`; the
# index patch rewrites the loop the raw and pair patches change too, merge it by hand):
#   raw    next_raw_cp_async.patch           fp8_ds_mla producer: records by cp.async, not UBLKCP
#   pair   raw + next_pair_schedule.patch    sparse fp8_ds_mla at 128·k heads: two CTAs of a
#                                            cluster, each dequantising half of every tile into both
#          (next_pair_schedule_bulk.patch: the same on HEAD's bulk copies, if raw fails)
#   dense  next_dense_ds_mla_producer.patch  dense fp8_ds_mla on the producer warpgroup
#   index  next_index_after_release.patch    sparse producers load indices after a release
#   stack  raw + pair + next_index_after_release_on_pair.patch + next_dense_ds_mla_producer_on_pair.patch
#          (the landing order; hopper_check --quick of all schedules)
# NOTES.md has each design and its prediction.
# Usage (device machine, repository root; .whl not needed; timeout_s 600 each):
#   PHASE=check OUT=$OUT bash tools/results/next_session_run.sh
#       every variant compiled in each tree, then hopper_check (short timeouts: a hang shows as
#       a timeout), the GPU tests that cover each patch, memcheck of the pair; ~6 minutes
#   PHASE=bench PASSED="raw pair dense index" OUT=$OUT bash tools/results/next_session_run.sh
#       the patches that passed, timed beside HEAD in the same run; ~6 minutes
#   PHASE=profile PASSED=... OUT=$OUT bash tools/results/next_session_run.sh
#       stall samples by region of the pair's kernel (else HEAD's), and the seesaw pair
#       probe by first thread and per warp (issue 8); ~4 minutes
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"
declare -A PATCH=([raw]="next_raw_cp_async.patch" [pair]="next_raw_cp_async.patch next_pair_schedule.patch"
                  [dense]=next_dense_ds_mla_producer.patch [index]=next_index_after_release.patch
                  [stack]="next_raw_cp_async.patch next_pair_schedule.patch next_index_after_release_on_pair.patch
                           next_dense_ds_mla_producer_on_pair.patch")
for v in raw pair dense index stack; do
  rm -rf /tmp/$v && cp -r . /tmp/$v
  for p in ${PATCH[$v]}; do (cd /tmp/$v && git apply tools/results/$p) || echo "$v: $p failed" >> "$L"; done
done

if [ "${PHASE:-check}" = check ]; then
  # HEAD's variants first; the trees then compile only what their patches change
  # (CuPy's cache is keyed by the rendered source)
  timeout 120 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"
  for t in /tmp/raw /tmp/pair /tmp/dense /tmp/index /tmp/stack; do
    (cd $t && timeout 150 python3 tools/warm_kernel_cache.py 2>&1 | tail -1) >> "$L" &
  done
  wait
  # the GPU work of the checks is small: the three trees side by side
  (cd /tmp/pair && { timeout 90 python3 tools/hopper_check.py --schedule pair; echo "[exit $?]";
     timeout 90 python3 tools/hopper_check.py --quick --schedule ring; echo "[exit $?]"; } > /tmp/check_pair.txt 2>&1) &
  (cd /tmp/dense && { timeout 150 python3 tools/hopper_check.py --schedule ring; echo "[exit $?]"; } \
     > /tmp/check_dense.txt 2>&1) &
  (cd /tmp/index && { timeout 90 python3 tools/hopper_check.py --quick --schedule ring; echo "[exit $?]"; } \
     > /tmp/check_index.txt 2>&1) &
  (cd /tmp/raw && { timeout 150 python3 tools/hopper_check.py --schedule ring; echo "[exit $?]"; } \
     > /tmp/check_raw.txt 2>&1) &
  (cd /tmp/stack && { timeout 150 python3 tools/hopper_check.py --quick; echo "[exit $?]"; } \
     > /tmp/check_stack.txt 2>&1) &
  wait
  # every hopper_check run of the tree ended, with 0 failures
  ok() { grep -q "correctness:" /tmp/check_$1.txt && ! grep "correctness:" /tmp/check_$1.txt | grep -qv " 0 failures" \
         && ! grep -q "\[exit [1-9]" /tmp/check_$1.txt; }
  for v in raw pair dense index stack; do echo "== check $v: $(grep -h 'correctness:\|\[exit' /tmp/check_$v.txt | tr '\n' ' ')" >> "$L"; done
  ok pair && (cd /tmp/pair && timeout 150 python3 -m pytest -m gpu tests/test_gpu_sparse.py tests/test_gpu_fp8.py -q \
     -p no:cacheprovider 2>&1 | tail -2 | sed 's/^/pair pytest: /') >> "$L" &
  ok dense && (cd /tmp/dense && timeout 150 python3 -m pytest -m gpu tests/test_gpu_fp8.py tests/test_gpu_dense.py -q \
     -k "fp8 or longest" -p no:cacheprovider 2>&1 | tail -2 | sed 's/^/dense pytest: /') >> "$L" &
  ok index && (cd /tmp/index && timeout 150 python3 -m pytest -m gpu tests/test_gpu_sparse.py -q \
     -p no:cacheprovider 2>&1 | tail -2 | sed 's/^/index pytest: /') >> "$L" &
  ok raw && (cd /tmp/raw && timeout 150 python3 -m pytest -m gpu tests/test_gpu_sparse.py tests/test_gpu_fp8.py -q \
     -p no:cacheprovider 2>&1 | tail -2 | sed 's/^/raw pytest: /') >> "$L" &
  wait
  ok pair && (cd /tmp/pair && timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
     python3 tools/memcheck_sparse.py 2>&1 | tail -1 | sed 's/^/pair memcheck: /') >> "$L"
  cat /tmp/check_raw.txt /tmp/check_pair.txt /tmp/check_dense.txt /tmp/check_index.txt /tmp/check_stack.txt \
    > $OUT/checks.txt
  exit 0
fi

passed() { case " ${PASSED:-} " in *" $1 "*) return 0;; esac; return 1; }
bench() { (cd $1 && timeout 150 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-120); }
S="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128"
BF="--batch-size 128 --num-heads 128 --q-len 1 --cache-len 32768 --layout bf16 --sparse-topk 2048"
D16="--batch-size 128 --num-heads 16 --q-len 1 --cache-len 8192 --layout fp8_ds_mla"
D128="--batch-size 128 --num-heads 128 --q-len 1 --cache-len 8192 --layout fp8_ds_mla"
if [ "${PHASE}" = bench ]; then
echo "== HEAD" >> "$L"; bench . "$S sparse_ds_mla_b128_sq1_h64 b128_h16_s8192" >> "$L"; bench . "$BF" >> "$L"
bench . "$D16" >> "$L"; bench . "$D128" >> "$L"
passed raw && { echo "== raw" >> "$L"; bench /tmp/raw "$S sparse_ds_mla_b128_sq1_h64" >> "$L"; }
passed pair && { echo "== pair" >> "$L"; bench /tmp/pair "$S" >> "$L"; }
# (index alone is not timed: of the stack, only it touches the bf16 sparse kernel, so the
#  stack's bf16 row measures it)
passed dense && { echo "== dense" >> "$L"; bench /tmp/dense "$D16" >> "$L"; bench /tmp/dense "$D128" >> "$L"; }
passed stack && { echo "== stack" >> "$L"; bench /tmp/stack "$S" >> "$L"; bench /tmp/stack "$BF" >> "$L"; }
echo "== HEAD again" >> "$L"; bench . "sparse_ds_mla_b128_sq1_h128" >> "$L"; bench . "$BF" >> "$L"
exit 0
fi

# PHASE=profile: where the time goes (the pair's sparse kernel if it passed, else HEAD's),
# and the seesaw pair's hand-overs (issue 8), by first thread and by warp
if passed pair; then
  echo "== hotspots pair" >> "$L"
  (cd /tmp/pair && timeout 120 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse \
     --top 16 --out /tmp/pair) >> "$L" 2>&1
  gzip -c /tmp/pair/hotspots_source.csv > $OUT/hotspots_pair.csv.gz
else
  echo "== hotspots HEAD" >> "$L"
  timeout 120 python3 tools/ncu_hotspots.py sparse_ds_mla_b128_sq1_h128 ds_mla_null_sparse --top 16 --out /tmp >> "$L" 2>&1
  gzip -c /tmp/hotspots_source.csv > $OUT/hotspots_head.csv.gz
fi
echo "== producer ceiling (HEAD)" >> "$L"; timeout 90 python3 tools/producer_ceiling.py >> "$L" 2>&1
passed pair && { echo "== producer ceiling (pair)" >> "$L"
  (cd /tmp/pair && timeout 90 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128) >> "$L" 2>&1; }
echo "== pair probe (HEAD seesaw)" >> "$L"; timeout 60 python3 tools/phase_probe.py --pair 3 >> "$L" 2>&1
echo "== pair probe per warp" >> "$L"; timeout 60 python3 tools/phase_probe.py --pair 3 --per-warp >> "$L" 2>&1
