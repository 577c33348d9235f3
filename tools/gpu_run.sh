#!/usr/bin/env bash
# One device-machine call: GPU tests, `mla-cupy check`, benchmark; logs to $OUT.
# Usage (on the GPU machine, from the checkout):
#   COMMIT=$(git rev-parse --short HEAD) BENCH=1 bash tools/gpu_run.sh [pytest args...]
set -u -o pipefail
OUT=${OUT:-/tmp/mla_out}
mkdir -p "$OUT"
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=${HYPOTHESIS_PROFILE:-gpu}
nvidia-smi --query-gpu=name,driver_version,clocks.sm,clocks.mem --format=csv | tee "$OUT/gpu.txt"
python3 -c "import cupy; print('cupy', cupy.__version__, 'nvrtc', cupy.cuda.nvrtc.getVersion())" | tee -a "$OUT/gpu.txt"
python3 -m mla_cupy check 2>&1 | tee "$OUT/check.log"
python3 -m mla_cupy demo 2>&1 | tee -a "$OUT/check.log"
python3 -m pytest -m gpu -x -q -p no:cacheprovider "$@" tests 2>&1 | tee "$OUT/pytest_gpu.log" | tail -30
[ "${MEMCHECK:-1}" = 0 ] || compute-sanitizer --tool memcheck --error-exitcode 1 python3 tools/memcheck_sparse.py 2>&1 | tee "$OUT/memcheck.log" | tail -15
# the bench beside FlashMLA and FlashInfer (installs .whl/ when carried); BENCH_ARGS picks cases
[ "${BENCH:-1}" = 0 ] || OUT="$OUT" bash tools/gpu_bench.sh ${BENCH_ARGS:-}
[ "${HOST:-1}" = 0 ] || python3 tools/host_cost.py --profile 2>&1 | tee "$OUT/host.log" | head -60
# Which target NVRTC builds when both -arch=sm_90a (ours) and CuPy's -arch=sm_90 are given:
python3 -c "
from cupy.cuda import nvrtc
p = nvrtc.createProgram('extern \"C\" __global__ void k(int* x){ x[0] = 1; }', 'k.cu', [], [])
nvrtc.compileProgram(p, ['-arch=sm_90a', '-arch=sm_90', '-Xptxas=-v'])
print([l for l in nvrtc.getProgramLog(p).splitlines() if 'Compiling entry' in l])" 2>&1 | tee -a "$OUT/host.log"
