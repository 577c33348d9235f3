#!/usr/bin/env bash
# One device-machine call: every GPU test file (in parallel: most of their time is
# NVRTC compiling on the CPU, and the H200 machine has 16 cores), the sanitizer
# sweep's quick subset beside them, then `mla-cupy check` / `demo`, the host cost per
# call and (BENCH=1) the bench beside the peers.  Logs to $OUT, at most 8 files:
#   gpu.txt  tests.log (every test file's tail, then the full logs)  sanitize.log
#   check.log  host.log  [bench.log bench.json roofline.png]
# Usage (on the GPU machine, from the checkout; .whl carried for the peers):
#   COMMIT=<this checkout's commit, from the machine you work on: the device copy's git
#   metadata can be older than its files> [BENCH=1] [SANITIZE=0] bash tools/gpu_run.sh [pytest args...]
set -u -o pipefail
OUT=${OUT:-/tmp/mla_out}
mkdir -p "$OUT"
work=$(mktemp -d)
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-gpu}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import cupy; print('cupy', cupy.__version__, 'nvrtc', cupy.cuda.nvrtc.getVersion())" | tee -a "$OUT/gpu.txt"
if ls .whl/*.whl >/dev/null 2>&1; then   # torch-free peers for host_cost and bench
  python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl \
    && export PYTHONPATH=$PYTHONPATH:/tmp/site
fi

start=$(date +%s)
# every variant compiled once, a process per core, into CuPy's disk cache (each
# test file's compiled_kernels fixture then loads them)
python3 tools/warm_kernel_cache.py | tee -a "$OUT/gpu.txt"
for f in tests/test_gpu_*.py; do
  name=$(basename "$f" .py)
  ( timeout "${TEST_TIMEOUT:-480}" python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 "$@" "$f" \
      > "$work/$name.log" 2>&1; echo "[$name exit $?]" >> "$work/$name.log" ) &
done
if [ "${SANITIZE:-1}" != 0 ]; then
  ( timeout "${SANITIZE_TIMEOUT:-480}" bash tools/sanitize_all.sh --quick --log-dir "$work/sanitize" \
      ${SANITIZE_ARGS:-} > "$OUT/sanitize.log" 2>&1; echo "[sanitize exit $?]" >> "$OUT/sanitize.log"
    cat "$work"/sanitize/*.log >> "$OUT/sanitize.log" 2>/dev/null ) &
fi
wait
echo "# tests and sanitizer: $(( $(date +%s) - start )) s" | tee "$OUT/tests.log"
for f in "$work"/test_*.log; do echo "== $(basename "$f")"; tail -4 "$f"; done | tee -a "$OUT/tests.log"
for f in "$work"/test_*.log; do echo; echo "==== $(basename "$f")"; cat "$f"; done >> "$OUT/tests.log"
[ "${SANITIZE:-1}" = 0 ] || tail -5 "$OUT/sanitize.log"

python3 -m mla_cupy check > "$OUT/check.log" 2>&1
python3 -m mla_cupy demo >> "$OUT/check.log" 2>&1
tail -8 "$OUT/check.log"
[ "${HOST:-1}" = 0 ] || timeout 240 python3 tools/host_cost.py --profile > "$OUT/host.log" 2>&1
[ "${HOST:-1}" = 0 ] || head -40 "$OUT/host.log"
# the bench beside FlashMLA and FlashInfer; BENCH_ARGS picks cases
[ "${BENCH:-0}" = 0 ] || OUT="$OUT" bash tools/gpu_bench.sh ${BENCH_ARGS:-} > /dev/null 2>&1
[ "${BENCH:-0}" = 0 ] || grep -v "^#" "$OUT/bench.log" | cut -c1-200
rm -rf "$work"
