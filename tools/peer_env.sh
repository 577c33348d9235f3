# Sourced (repository root, device machine): the peers' wheels carried in .whl/ installed
# into /tmp/site (the GPU machine has no registry) and the environment FlashInfer's JIT
# needs, for tools/gpu_bench.sh and any tool that runs a peer (ncu_compare.py,
# kernel_times.py --peer).
if ls .whl/*.whl >/dev/null 2>&1; then
  python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --upgrade \
    --target /tmp/site .whl/*.whl && export PYTHONPATH=/tmp/site:${PYTHONPATH:-}
fi
export PYTHONPATH=.:${PYTHONPATH:-} PYTHONUNBUFFERED=1
export FLASHINFER_WORKSPACE_BASE=${FLASHINFER_WORKSPACE_BASE:-/tmp/flashinfer}
export FLASHINFER_CUDA_ARCH_LIST=${FLASHINFER_CUDA_ARCH_LIST:-9.0a}
# FlashInfer links its JIT-built modules with -lcuda; where the toolkit ships no
# stub, point its linker at the driver library itself.
nvcc_bin=$(command -v nvcc || echo /usr/local/cuda/bin/nvcc)
if [ ! -e "$(dirname "$nvcc_bin")/../lib64/stubs/libcuda.so" ]; then
  lib=$(ldconfig -p 2>/dev/null | awk '/libcuda\.so\.1 /{print $NF; exit}')
  for c in /usr/local/nvidia/lib64/libcuda.so.1 /usr/lib/x86_64-linux-gnu/libcuda.so.1; do
    [ -n "$lib" ] || { [ -e "$c" ] && lib=$c; }
  done
  if [ -n "$lib" ]; then
    mkdir -p /tmp/libcuda_link && ln -sf "$lib" /tmp/libcuda_link/libcuda.so
    export FLASHINFER_EXTRA_LDFLAGS="-L/tmp/libcuda_link"
  fi
fi
