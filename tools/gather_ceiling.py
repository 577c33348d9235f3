"""What DRAM gives a sparse decode's gathers: the rows a sparse case's indices name, read by
a plain kernel built only to read them, beside the same number of rows read in order.

Issue 9 asks sparse h16 / h32 for 85% of the copy bandwidth counting the bytes gathered.
That assumes random rows of one record (656 bytes for fp8_ds_mla) stream as fast as a
copy does. This tool measures how fast they do stream, on the bench's own inputs
(mla_cupy.bench.build_inputs: the same cache, page table and indices as `mla-cupy bench`).
The read kernel is as simple as a read can be: each warp reads whole rows with 16-byte
loads (a lane a piece), many warps an SM, no shared memory, no barrier, no math. Each
thread folds what it read into one word that it stores, so no load is dropped.
Modes:
  * gather: the case's rows (its d_indices, in their order, -1 skipped);
  * sorted: the same rows sorted (the DRAM sees the same set of rows, read in address order);
  * stream: as many rows from row 0 on, back to back (the copy-like baseline);
  * bulk: the case's rows as the narrow kernel's copying warps take them (two warps a CTA,
    one CTA an SM, a bulk copy a row into a ring of four 64-row tiles), nothing else;
  * bulk_stream: the same, over the stream's rows (a bulk copy a row, in address order).
Each is timed like `mla-cupy bench` (512 MiB L2 flush before each repeat, the host kept
ahead, median). Prints µs, TB/s of row bytes, and the fraction of the copy ceiling.

    PYTHONPATH=. python3 tools/gather_ceiling.py sparse_ds_mla_b128_sq1_h16 [--repeats 20]
"""
from __future__ import annotations

import argparse
import sys

import numpy as np

_SRC = r"""
extern "C" __global__ void __launch_bounds__(256)
read_rows(const unsigned char* __restrict__ rows, const int* __restrict__ which, long long count,
          int row_bytes, unsigned* __restrict__ sink) {
    // warp w reads rows which[w], which[w + warps], ...: lane l its pieces l, l + 32, ...
    const int lane = threadIdx.x & 31;
    const long long warps = (long long)gridDim.x * (blockDim.x >> 5);
    const int pieces = row_bytes >> 4;
    unsigned acc = 0;
    for (long long w = (long long)blockIdx.x * (blockDim.x >> 5) + (threadIdx.x >> 5); w < count; w += warps) {
        const int r = which[w];
        if (r < 0) continue;
        const uint4* row = reinterpret_cast<const uint4*>(rows + (long long)r * row_bytes);
        for (int i = lane; i < pieces; i += 32) {
            const uint4 v = __ldcs(row + i);
            acc ^= v.x ^ v.y ^ v.z ^ v.w;
        }
    }
    sink[(long long)blockIdx.x * blockDim.x + threadIdx.x] = acc;
}

// The narrow kernel's copying warps without the rest of it: one CTA an SM, two warps, a lane a
// row of each 64-row tile, one bulk copy (TMA) a row into a ring of `stages` tiles, each tile's
// mbarrier completing when its 64 lanes arrived and its bytes landed; a tile's buffer is
// reused once its copies completed.  CTA c takes tiles c, c + gridDim.x, ...
__device__ __forceinline__ unsigned smem_u32(const void* p) {
    return static_cast<unsigned>(__cvta_generic_to_shared(p));
}
__device__ __forceinline__ void wait_parity(unsigned bar, unsigned parity) {
    unsigned done = 0;
    while (!done)
        asm volatile("{\n.reg .pred p;\nmbarrier.try_wait.parity.shared::cta.b64 p, [%1], %2;\n"
                     "selp.u32 %0, 1, 0, p;\n}" : "=r"(done) : "r"(bar), "r"(parity) : "memory");
}
extern "C" __global__ void __launch_bounds__(64)
bulk_rows(const unsigned char* __restrict__ rows, const int* __restrict__ which, long long count,
          int row_bytes, unsigned* __restrict__ sink, int stages) {
    extern __shared__ __align__(128) unsigned char smem[];
    const int tile_bytes = 64 * row_bytes;
    unsigned long long* bars = reinterpret_cast<unsigned long long*>(smem + stages * tile_bytes);
    const int n = threadIdx.x;
    if (n < stages) asm volatile("mbarrier.init.shared::cta.b64 [%0], 64;" :: "r"(smem_u32(bars + n)));
    asm volatile("fence.mbarrier_init.release.cluster;\nfence.proxy.async.shared::cta;" ::: "memory");
    __syncthreads();
    const long long tiles = (count + 63) / 64;
    int i = 0;
    for (long long t = blockIdx.x; t < tiles; t += gridDim.x, ++i) {
        const int b = i % stages;
        const unsigned bar = smem_u32(bars + b);
        if (i >= stages) {   // the copies this buffer took `stages` tiles ago have landed
            wait_parity(bar, ((i / stages) - 1) & 1);
        }
        const long long w = t * 64 + n;
        const int r = w < count ? which[w] : -1;
        asm volatile("mbarrier.arrive.expect_tx.shared::cta.b64 _, [%0], %1;"
                     :: "r"(bar), "r"(r >= 0 ? row_bytes : 0) : "memory");
        if (r >= 0)
            asm volatile("cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes [%0], [%1], %2, [%3];"
                         :: "r"(smem_u32(smem + b * tile_bytes + n * row_bytes)),
                            "l"(rows + (long long)r * row_bytes), "r"(row_bytes), "r"(bar) : "memory");
    }
    for (int k = i - stages < 0 ? 0 : i - stages; k < i; ++k) {   // the last tiles landed
        wait_parity(smem_u32(bars + k % stages), (k / stages) & 1);
    }
    sink[(long long)blockIdx.x * blockDim.x + n] = reinterpret_cast<const unsigned*>(smem)[n];
}
"""
STAGES = 4   # the narrow RS kernel's raw ring for fp8_ds_mla


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    p.add_argument("cases", nargs="+", help="sparse bench case names (mla-cupy bench --list)")
    p.add_argument("--repeats", type=int, default=20)
    p.add_argument("--blocks-per-sm", type=int, default=8, help="256-thread blocks an SM (8: 64 warps)")
    args = p.parse_args(argv)

    import cupy

    from mla_cupy import bench

    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    timer = bench.Timer()
    ceilings = timer.ceilings()
    kernel = cupy.RawKernel(_SRC, "read_rows", options=("-arch=sm_90a",))
    bulk = cupy.RawKernel(_SRC, "bulk_rows", options=("-arch=sm_90a",))
    sms = props["multiProcessorCount"]
    blocks = sms * args.blocks_per_sm
    sink = cupy.empty(blocks * 256, dtype=cupy.uint32)
    print(f"# {props['name'].decode()}: copy {ceilings['copy_tb_s']:.2f} TB/s; {blocks} blocks of 256; "
          f"median of {args.repeats}, L2 flushed before each")
    for name in args.cases:
        case = bench.case_named(name)
        if not case.sparse:
            print(f"{name}: not a sparse case", file=sys.stderr)
            return 2
        inputs = bench.build_inputs(case)
        cache = inputs.kv.blocks
        row_bytes = int(cache.shape[-1])
        flat = cache.reshape(-1, row_bytes)
        which = inputs.d_indices.reshape(-1)
        valid = int((which >= 0).sum())
        modes = {"gather": which, "sorted": cupy.sort(which),
                 "stream": cupy.arange(min(valid, flat.shape[0]), dtype=cupy.int32)}
        smem = STAGES * 64 * row_bytes + 8 * STAGES
        bulk.max_dynamic_shared_size_bytes = smem
        modes["bulk"], modes["bulk_stream"] = which, modes["stream"]
        for mode, rows in modes.items():
            count = int(rows.size)
            nbytes = (count if "stream" in mode else valid) * row_bytes

            def call(rows=rows, count=count, mode=mode):
                if mode.startswith("bulk"):   # one CTA an SM (the decode's grid)
                    bulk((sms,), (64,), (flat, rows, np.int64(count), np.int32(row_bytes), sink, np.int32(STAGES)),
                         shared_mem=smem)
                else:
                    kernel((blocks,), (256,), (flat, rows, np.int64(count), np.int32(row_bytes), sink))

            us, best, ahead = timer.gpu_us(call, args.repeats)
            tb_s = nbytes / (us * 1e-6) / 1e12
            print(f"{name:34s} {mode:11s} rows {nbytes // row_bytes:8d} x {row_bytes} B  {us:8.1f} us "
                  f"(best {best:.1f})  {tb_s:5.2f} TB/s  {100 * tb_s / ceilings['copy_tb_s']:5.1f}% of copy"
                  f"{'' if ahead else '  (host not ahead)'}", flush=True)
        del inputs, cache, flat, which, modes
        cupy.get_default_memory_pool().free_all_blocks()
    return 0


if __name__ == "__main__":
    sys.exit(main())
