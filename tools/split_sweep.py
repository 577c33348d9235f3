"""Time mla_cupy's serving call at several forced ``num_partitions`` per named bench
case (L2 flushed, host kept ahead, median of repeats), beside the P the dispatcher
picks, to see what the split rule leaves on the table.  Each P's output is compared
with the chosen P's (same inputs) before it is timed.

    PYTHONPATH=. python3 tools/split_sweep.py b32_h128_s4096:1,2,3,4 b1_h128_s65536:32,64,128
"""
import argparse

import numpy as np

from mla_cupy import bench
from mla_cupy.scalar_args import pack_scalar_args


def call_with(case, inputs, num_partitions):
    import cupy

    from mla_cupy.dispatch import generic_flare_mla_decode_kv_cache_ragged
    kv = inputs.kv
    sa = pack_scalar_args(case.batch_size, case.q_len, kv.max_cache_length, case.num_heads,
                          layout=case.layout, sparse_mla=case.sparse, indices_stride=case.sparse_topk,
                          num_partitions=num_partitions)
    out = cupy.full((case.num_tokens, case.num_heads, bench.D_V), np.nan, dtype=inputs.q.dtype)
    kw = dict(mask_str=case.mask, attn_sink_ptr=inputs.sink)
    if case.sparse:
        kw.update(sparse_mla=True, d_indices=inputs.d_indices, indices_stride=case.sparse_topk)

    def call():
        generic_flare_mla_decode_kv_cache_ragged(inputs.q, inputs.offsets, kv, 0, inputs.scale, out,
                                                 sa, **kw)
    return call, out, sa.num_partitions


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("cases", nargs="+", help="CASE:P1,P2,... (bench.case_named names)")
    p.add_argument("--repeats", type=int, default=20)
    args = p.parse_args()
    timer = bench.Timer()
    for spec in args.cases:
        name, ps = spec.split(":")
        case = bench.case_named(name)
        inputs = bench.build_inputs(case)
        base, base_out, chosen = call_with(case, inputs, None)
        base()
        timer.sync()
        us, _, ahead = timer.gpu_us(base, args.repeats)
        print(f"{name}: chosen P={chosen}: {us:.1f} us{'' if ahead else ' (host behind)'}", flush=True)
        for n in (int(x) for x in ps.split(",")):
            fn, out, _ = call_with(case, inputs, n)
            fn()
            timer.sync()
            err = float(abs(out.astype(np.float32) - base_out.astype(np.float32)).max())
            us, _, ahead = timer.gpu_us(fn, args.repeats)
            print(f"  P={n:4d}: {us:8.1f} us  max |diff| vs chosen {err:.3g}"
                  f"{'' if ahead else ' (host behind)'}", flush=True)


if __name__ == "__main__":
    main()
