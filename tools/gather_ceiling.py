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
  * stream: as many rows from row 0 on, back to back (the copy-like baseline).
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
"""


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
    kernel = cupy.RawKernel(_SRC, "read_rows")
    blocks = props["multiProcessorCount"] * args.blocks_per_sm
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
        for mode, rows in modes.items():
            count = int(rows.size)
            nbytes = (valid if mode != "stream" else count) * row_bytes

            def call(rows=rows, count=count):
                kernel((blocks,), (256,), (flat, rows, np.int64(count), np.int32(row_bytes), sink))

            us, best, ahead = timer.gpu_us(call, args.repeats)
            tb_s = nbytes / (us * 1e-6) / 1e12
            print(f"{name:34s} {mode:6s} rows {nbytes // row_bytes:8d} x {row_bytes} B  {us:8.1f} us "
                  f"(best {best:.1f})  {tb_s:5.2f} TB/s  {100 * tb_s / ceilings['copy_tb_s']:5.1f}% of copy"
                  f"{'' if ahead else '  (host not ahead)'}", flush=True)
        del inputs, cache, flat, which, modes
        cupy.get_default_memory_pool().free_all_blocks()
    return 0


if __name__ == "__main__":
    sys.exit(main())
