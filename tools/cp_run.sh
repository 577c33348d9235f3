#!/usr/bin/env bash
# Context-parallel decode on the 2-GPU machine (nvidia-h200-x2): the CPU and 2-GPU
# tests, then the benchmark on 2 ranks and on 1; logs to $OUT (default /tmp/mla_cp_out).
#   bash tools/cp_run.sh
set -u -o pipefail
cd "$(dirname "$0")/.."
OUT=${OUT:-/tmp/mla_cp_out}
mkdir -p "$OUT"
# NVLink multicast stays off in NCCL, PyTorch and NVSHMEM (the machine's rule), in every process.
export NCCL_NVLS_ENABLE=0 TORCH_SYMM_MEM_DISABLE_MULTICAST=1 NVSHMEM_DISABLE_NVLS=1
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1
nvidia-smi --query-gpu=index,name,driver_version --format=csv | tee "$OUT/gpu.txt"
nvidia-smi topo -m 2>&1 | tee -a "$OUT/gpu.txt"
python3 -c "
import cupy, torch
from cupy.cuda import nccl
print('cupy', cupy.__version__, 'torch', torch.__version__, 'gpus', torch.cuda.device_count(),
      'cupy nccl available', getattr(nccl, 'available', '?'), 'version', nccl.get_version())" 2>&1 | tee -a "$OUT/gpu.txt"
rc=0
timeout 300 python3 -m pytest -q -p no:cacheprovider tests/test_distributed.py tests/test_gpu_distributed.py \
    2>&1 | tee "$OUT/cp_tests.log" | tail -25 || rc=1
for n in 2 1; do
    timeout 240 python3 -m torch.distributed.run --standalone --nproc-per-node $n tools/cp_bench.py \
        2>&1 | tee "$OUT/cp_bench_${n}rank.log" || rc=1
done
exit $rc
