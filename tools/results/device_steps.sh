# Sourced by a device script from the repository root (tools/results/*.sh, session 16 on;
# the scripts before it carry their own copies, as they ran).  Needs L (the log), T0
# (the script's start, $SECONDS) and C (bench case names); REPEATS and BENCH_TIMEOUT
# override the defaults.
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
# C timed in the current directory's tree (a patched copy: cd there first), short rows
bench() {
  timeout "${BENCH_TIMEOUT:-80}" python3 tools/bench.py $C --repeats "${REPEATS:-20}" --check-seqs 2 2>&1 \
    | grep -v "^#" | cut -c1-100 >> "$L"
}
# Custom shapes in the current directory's tree: H heads, N cached keys, batch sizes
# BATCHES (default "16 32"), one bench row each.  (session 35 on)
bench_batches() {
  local b
  for b in ${BATCHES:-16 32}; do
    PYTHONPATH=. timeout 60 python3 tools/bench.py --batch-size "$b" --num-heads "$1" --cache-len "$2" \
      --repeats "${REPEATS:-20}" --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"
  done
}
# A copy of the tree at DIR with PATCH (a file in tools/results/) applied (session 17 on)
patched() {
  rm -rf "$1" && cp -r . "$1" && (cd "$1" && git apply "tools/results/$2") || say "apply $2 failed"
}
# ROUNDS (default 2) rounds of C: HEAD, then the tree at DIR, labelled LABEL (session 17 on)
compare_rounds() {
  local r
  for r in $(seq "${ROUNDS:-2}"); do
    echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench; say bench
    echo "== $1 ($r)" >> "$L"; (cd "$2" && PYTHONPATH=. bench); say bench
  done
}
# The GPU test files tests/test_gpu_F.py for each F given, on the forced portable path
# (MLA_CUPY_BACKEND=portable), in parallel; each file's last lines to the log, all of
# them to $OUT/portable.log.  PORTABLE_TIMEOUT (default 400 s) a file.  Warm the kernel
# cache first on a fresh machine (session 19: three files compiling in the tests
# finished none in 400 s).  (session 19 on)
portable() {
  local f
  for f in "$@"; do
    ( MLA_CUPY_BACKEND=portable PYTHONPATH=.:tests:${PYTHONPATH:-} timeout "${PORTABLE_TIMEOUT:-400}" \
        python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 tests/test_gpu_$f.py > /tmp/port_$f.log 2>&1
      echo "[portable $f exit $?]" >> /tmp/port_$f.log ) &
  done
  wait
  for f in "$@"; do tail -2 /tmp/port_$f.log >> "$L"; cat /tmp/port_$f.log >> $OUT/portable.log; done
}
# The named kernels compiled into CuPy's cache in each tree given (the repository root
# and patched copies), in parallel, before a check or bench compiles them itself (a
# bench round compiling its kernels can run past its timeout).  K: kernel names.
# (session 20 on)
warm_kernels() {
  local d k
  for d in "$@"; do
    for k in $K; do
      (cd "$d" && PYTHONPATH=. timeout 200 python3 -c "from mla_cupy.compiler import get_kernel; get_kernel('$k')" \
        > /dev/null 2>&1 || echo "warm $d $k failed" >> "$L") &
    done
  done
  wait
}
# hopper_check --schedule SCHEDULE in the tree at DIR, its output to $OUT/check_LABEL.txt,
# its verdict (and any FAIL lines) to the log; returns its exit status.  (session 22 on)
check_tree() {
  local rc
  (cd "$1" && PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule "$3" > "$OUT/check_$2.txt" 2>&1)
  rc=$?
  say "check $2 exit $rc: $(grep -h 'correctness' "$OUT/check_$2.txt")"
  [ $rc -eq 0 ] || grep FAIL "$OUT/check_$2.txt" | cut -c1-300 >> "$L"
  return $rc
}
# The GPU test files tests/test_gpu_F.py for each F given, in the current directory's tree,
# each one's last lines to the log labelled LABEL (GPU_FILE_TIMEOUT, default 60 s, a file).
# Warm the kernel cache first: the files compile every variant.  (session 23 on)
gpu_files() {
  local label=$1 f; shift
  for f in "$@"; do
    PYTHONPATH=.:tests:${PYTHONPATH:-} timeout "${GPU_FILE_TIMEOUT:-60}" python3 -m pytest -m gpu -q \
      -p no:cacheprovider --maxfail=3 tests/test_gpu_$f.py > /tmp/t_$f.log 2>&1
    echo "[$f exit $?]" >> /tmp/t_$f.log; say "$label $f: $(tail -2 /tmp/t_$f.log | tr '\n' ' ')"
    cp /tmp/t_$f.log "$OUT/gpu_${label}_$f.log"
  done
}
# tools/memcheck_sparse.py under compute-sanitizer memcheck in the current directory's tree,
# its verdict to the log labelled LABEL.  (session 23 on)
memcheck_sparse() {
  PYTHONPATH=. timeout 60 compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py \
    > /tmp/memcheck_$1.log 2>&1
  say "$1 memcheck exit $?: $(grep -h 'ERROR SUMMARY\|cases done' /tmp/memcheck_$1.log | tr '\n' ' ')"
}
# Issue 9's five FlashMLA rows beside the peers (tools/gpu_bench.sh; .whl carried, COMMIT
# set), REPEATS (default 30) repeats, the table to the log.  (session 23 on)
peer_sparse_rows() {
  (bash tools/gpu_bench.sh sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 \
    sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128 --repeats "${REPEATS:-30}" > /dev/null 2>&1)
  say "peer bench $?"
  cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote" >> "$L"
}
# Every row of the README's peer tables (issue 8's dense rows and DeepSeek shapes, issue 9's
# five sparse FlashMLA rows) beside the peers (tools/gpu_bench.sh; .whl carried, COMMIT set),
# REPEATS (default 20), the table to the log.  (session 24 on)
peer_all_rows() {
  (timeout "${PEER_TIMEOUT:-200}" bash tools/gpu_bench.sh b128_h16_s8192 b8_h16_s8192 b128_h128_s8192 \
    b32_h128_s4096 b128_sq2_h128_varlen_causal b1_h128_s65536 ds_h16_sq1_ragged ds_h16_sq1_uniform \
    ds_h32_sq1_ragged ds_h32_sq1_uniform ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h128_sq1_ragged \
    ds_h128_sq1_uniform sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 \
    sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128 --repeats "${REPEATS:-20}" > /dev/null 2>&1)
  say "peer bench $?"
  cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote" >> "$L"
}
# A patched tree checked before it is timed: DIR with PATCH applied (patched), its kernel
# cache warmed, hopper_check --schedule SCHEDULE (check_tree, labelled LABEL), then the
# GPU test files F... in it (gpu_files; GPU_FILE_TIMEOUT) and the sparse memcheck.
# Returns check_tree's status.  (session 25 on)
checked_patch() {
  local dir=$1 patch=$2 label=$3 schedule=$4 rc; shift 4
  patched "$dir" "$patch"
  (cd "$dir" && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1)
  say "warm $label: $(head -1 /tmp/warm.txt)"
  check_tree "$dir" "$label" "$schedule"; rc=$?
  (cd "$dir" && gpu_files "$label" "$@" && memcheck_sparse "$label")
  return $rc
}
# A call's start: the log $OUT/log.txt emptied, T0 set, HEAD's kernel cache warmed (the
# lines every script from session 16 on began with).  Source this file, then call it.
# (session 28 on)
begin_call() {
  L=$OUT/log.txt; : > "$L"; T0=$SECONDS
  (PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm0.txt 2>&1)
  say "warm HEAD: $(head -1 /tmp/warm0.txt)"
}
# ROUNDS (default 2) rounds of C over each tree given (the repository root as `.`, patched
# copies by directory), labelled by directory and round.  (session 28 on)
bench_trees() {
  local r t
  for r in $(seq "${ROUNDS:-2}"); do
    for t in "$@"; do echo "== $t ($r)" >> "$L"; (cd "$t" && PYTHONPATH=. bench); done
    say "round $r"
  done
}
# One bench case under each forced Hopper schedule in S (default "auto ring"), labelled LABEL:
# schedule_sweep LABEL BENCH-ARGS...  (named cases or a custom shape; session 33 on)
schedule_sweep() {
  local label=$1 s; shift
  for s in ${S:-auto ring}; do
    echo "== $label $s" >> "$L"
    MLA_CUPY_HOPPER_SCHEDULE=$s PYTHONPATH=. timeout "${BENCH_TIMEOUT:-80}" python3 tools/bench.py "$@" \
      --repeats "${REPEATS:-20}" --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"
  done
}
# One custom-shape bench row for each layout in LAYOUTS (default "fp8_ds_mla fp8") in each
# tree given (the repository root as `.`, patched copies by directory):
# bench_shape_trees "BENCH-ARGS" TREES...  (session 41 on)
bench_shape_trees() {
  local args=$1 t layout; shift
  for t in "$@"; do
    for layout in ${LAYOUTS:-fp8_ds_mla fp8}; do
      echo "== $t $args $layout" >> "$L"
      (cd "$t" && PYTHONPATH=. timeout "${BENCH_TIMEOUT:-60}" python3 tools/bench.py $args --layout "$layout" \
         --repeats "${REPEATS:-20}" --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-110 >> "$L")
    done
  done
}
# A copy of the tree at DIR with PATCHES (files in tools/results/) applied in order, its
# kernel cache warmed, labelled LABEL in the log: patched_stack DIR LABEL PATCH...  (session 42 on)
patched_stack() {
  local dir=$1 label=$2 p; shift 2
  rm -rf "$dir" && cp -r . "$dir" || say "copy $dir failed"
  for p in "$@"; do (cd "$dir" && git apply "tools/results/$p") || say "apply $p failed"; done
  (cd "$dir" && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > "/tmp/warm_$label.txt" 2>&1)
  say "warm $label: $(head -1 "/tmp/warm_$label.txt")"
}
# The 16-row RS kernels' checks in the current directory's tree, labelled LABEL: hopper_check
# narrow, the fp8 and sparse GPU files, the dense file's fp8 tests, memcheck of the 16-row
# sparse garbage-index cases with SEED: rs_checks LABEL SEED; returns hopper_check's status.
# (session 44 on)
rs_checks() {
  local rc
  check_tree . "$1" narrow; rc=$?
  GPU_FILE_TIMEOUT=90 gpu_files "$1" fp8 sparse
  (PYTHONPATH=.:tests timeout 70 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
     -k "narrow_schedule_fp8 or longest_first or schedule_reused" > /tmp/t_dense_fp8.log 2>&1; echo "[exit $?]" >> /tmp/t_dense_fp8.log)
  say "$1 dense -k fp8: $(tail -2 /tmp/t_dense_fp8.log | tr '\n' ' ')"
  (MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
     python3 tools/results/rs_memcheck_cases.py 16 "$2" > /tmp/mc.log 2>&1)
  say "$1 memcheck 16 $2 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc.log | cut -c1-120 | tr '\n' ' ')"
  return $rc
}
