"""Host cost of one decode call: wall clock per call over back-to-back calls,
the GPU held busy by a spin kernel so that only the host is timed.

Usage (repository root):
    PYTHONPATH=. python3 tools/host_cost.py [--calls 200] [--repeats 7] [--peer flashinfer]
    PYTHONPATH=. python3 tools/host_cost.py --stub      # no GPU: the launch itself stubbed out

Cases: b=1 h=16 with 256 keys and b=8 h=16 with 256 keys (page 64, bf16, one
token per sequence; the split num_partitions the cost model picks).  Paths:
the MAX-style entry with a ScalarArgs (CuPy arrays, torch tensors), a
DecodePlan's run (CuPy, torch; and through CuPy's RawKernel.__call__ instead
of cuLaunchKernel, MLA_CUPY_LAUNCH=cupy), mla_decode (allocating its output;
and into a given one), and FlashMLA's flash_mla_with_kvcache (and FlashInfer's
run() after plan(), with --peer flashinfer) on the same inputs when
importable.  Targets (issue 10): entry and plan.run <= 20 us, mla_decode <= 30 us.

--stub runs without a GPU (mla_cupy.testing.stub_device): metadata-only
arrays, stand-in kernels, cuLaunchKernel replaced by a no-op.  It measures the
Python of a call -- validation-free memo lookup, address gathering, slot
writes -- but not the driver's launch (a few us per kernel on the GPU) nor
CuPy/torch array attribute access, so its numbers are a lower bound.
"""
from __future__ import annotations

import argparse
import contextlib
import os
import statistics
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

from mla_cupy import environment  # noqa: E402
from mla_cupy import (PagedKVCollection, generic_flare_mla_decode_kv_cache_ragged, mla_decode,  # noqa: E402
                      pack_scalar_args, plan_decode)

CASES = (("b1_h16_k256", 1, 16, 256), ("b8_h16_k256", 8, 16, 256))
TARGETS = {"entry": 20.0, "plan.run": 20.0, "mla_decode": 30.0}


def per_call_us(fn, calls, repeats, hold_gpu) -> float:
    """Median over ``repeats`` of the host wall time per call of ``calls``
    back-to-back calls; ``hold_gpu(None)`` (when given) keeps the GPU busy
    meanwhile and ``hold_gpu("sync")`` waits for it afterwards."""
    fn()
    fn()
    samples = []
    for _ in range(repeats):
        if hold_gpu is not None:
            hold_gpu(None)
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        samples.append((time.perf_counter() - t0) / calls * 1e6)
        if hold_gpu is not None:
            hold_gpu("sync")
    return statistics.median(samples)


def gpu_holder(calls):
    """Spin the GPU for longer than ``calls`` calls take to queue, then sync."""
    import cupy

    from mla_cupy.bench import _SPIN_SRC
    spin = cupy.RawKernel(_SPIN_SRC, "mla_bench_spin")

    def hold(what):
        if what == "sync":
            cupy.cuda.Device().synchronize()
        else:
            spin((1,), (1,), (np.uint64(int(calls * 200e3)),))   # 200 us per call
    return hold


def gpu_rows(args):
    import cupy

    from mla_cupy.bench import BenchCase, build_inputs
    from mla_cupy.peers import PEERS, torch_view
    try:
        import torch
    except ImportError:
        torch = None
    hold = gpu_holder(args.calls)
    rows = []
    for name, batch, heads, keys in CASES:
        case = BenchCase(name, batch, heads, 1, keys)
        inputs = build_inputs(case)
        q, offsets, kv = inputs.q, inputs.offsets, inputs.kv
        sa = pack_scalar_args(batch, 1, kv.max_cache_length, heads)
        out = cupy.empty((batch, heads, 512), dtype=q.dtype)
        paths = {
            "entry ScalarArgs (cupy)": lambda: generic_flare_mla_decode_kv_cache_ragged(
                q, offsets, kv, 0, inputs.scale, out, sa),
            "mla_decode (cupy)": lambda: mla_decode(q, kv, offsets, scale=inputs.scale, q_max_seq_len=1),
            "mla_decode out= (cupy)": lambda: mla_decode(q, kv, offsets, scale=inputs.scale,
                                                         q_max_seq_len=1, out=out),
        }
        plan = plan_decode(q, offsets, kv, 0, inputs.scale, out, sa)
        paths["plan.run (cupy)"] = lambda: plan.run(q, out)
        with _env(environment.LAUNCH, "cupy"):
            plan_cupy_launch = plan_decode(q, offsets, kv, 0, inputs.scale, out, sa)
        paths["plan.run via RawKernel.__call__ (cupy)"] = lambda: plan_cupy_launch.run(q, out)
        if torch is not None:
            tq, toffs, tout = torch_view(q), torch_view(offsets), torch_view(out)
            tkv = PagedKVCollection(torch_view(kv.blocks), torch_view(kv.lookup_table),
                                    torch_view(kv.cache_lengths), kv.page_size,
                                    max_cache_length=kv.max_cache_length)
            tplan = plan_decode(tq, toffs, tkv, 0, inputs.scale, tout, sa)
            paths.update({
                "entry ScalarArgs (torch)": lambda: generic_flare_mla_decode_kv_cache_ragged(
                    tq, toffs, tkv, 0, inputs.scale, tout, sa),
                "plan.run (torch)": lambda: tplan.run(tq, tout),
                "mla_decode (torch)": lambda: mla_decode(tq, tkv, toffs, scale=inputs.scale,
                                                         q_max_seq_len=1),
            })
        for peer_name in ["flashmla", *args.peer]:
            peer = PEERS[peer_name]
            reason = peer.available() or peer.unsupported(case)
            if reason is not None:
                print(f"# {name}: {peer_name} skipped: {reason}")
                continue
            call, _, _ = peer.prepare(case, inputs)
            paths[f"{peer_name} (torch)"] = call
        for path, fn in paths.items():
            rows.append((name, path, per_call_us(fn, args.calls, args.repeats, hold),
                         plan.num_partitions))
        _LAST_ENTRY[:] = [paths["entry ScalarArgs (cupy)"]]
    return rows


_LAST_ENTRY: list = []


def _stubbed():
    from mla_cupy.testing import stub_device
    return stub_device(record=False)


def stub_rows(args):
    from mla_cupy.testing import FakeCudaArray as F
    rows = []
    with _stubbed():
        for name, batch, heads, keys in CASES:
            pages = -(-(keys + 1) // 64)
            kv = PagedKVCollection(F((batch * pages, 64, 576), "bfloat16"), F((batch, pages + 1), np.int32),
                                   F((batch,), np.int32), 64, max_cache_length=keys)
            q, out = F((batch, heads, 576), "bfloat16"), F((batch, heads, 512), "bfloat16")
            offsets = F((batch + 1,), np.int32)
            scale = 576 ** -0.5
            sa = pack_scalar_args(batch, 1, keys, heads)
            plan = plan_decode(q, offsets, kv, 0, scale, out, sa)
            paths = {
                "entry ScalarArgs (stub arrays)": lambda: generic_flare_mla_decode_kv_cache_ragged(
                    q, offsets, kv, 0, scale, out, sa),
                "plan.run (stub arrays)": lambda: plan.run(q, out),
                "mla_decode (stub arrays)": lambda: mla_decode(q, kv, offsets, scale=scale, q_max_seq_len=1),
                "mla_decode out= (stub arrays)": lambda: mla_decode(q, kv, offsets, scale=scale,
                                                                    q_max_seq_len=1, out=out),
            }
            for path, fn in paths.items():
                rows.append((name, path, per_call_us(fn, args.calls, args.repeats, None),
                             plan.num_partitions))
            _LAST_ENTRY[:] = [paths["entry ScalarArgs (stub arrays)"]]
    return rows


@contextlib.contextmanager
def _env(name, value):
    old = os.environ.get(name)
    os.environ[name] = value
    try:
        yield
    finally:
        if old is None:
            del os.environ[name]
        else:
            os.environ[name] = old


def main(argv=None) -> int:
    p = argparse.ArgumentParser(description=__doc__.split("\n\n")[0])
    p.add_argument("--calls", type=int, default=200, help="back-to-back calls per sample")
    p.add_argument("--repeats", type=int, default=7, help="samples (median reported)")
    p.add_argument("--stub", action="store_true", help="no GPU: stub the launch (Python cost only)")
    p.add_argument("--peer", action="append", default=[], choices=["flashinfer"],
                   help="also time FlashInfer's run() (FlashMLA is timed when importable)")
    p.add_argument("--profile", action="store_true",
                   help="then cProfile the entry path of the last case (top 15 by own time)")
    args = p.parse_args(argv)
    rows = stub_rows(args) if args.stub else gpu_rows(args)
    kind = ("STUBBED launch (no GPU): Python overhead only" if args.stub
            else "host wall clock per call, GPU held busy")
    print(f"# host cost, {kind}; median of {args.repeats} x {args.calls} calls")
    print(f"{'case':14s} {'path':40s} {'us/call':>8s}  target")
    for case, path, us, parts in rows:
        target = next((t for k, t in TARGETS.items() if path.startswith(k)), None)
        mark = "" if target is None else f"<= {target:.0f} {'ok' if us <= target else 'OVER'}"
        print(f"{case:14s} {path:40s} {us:8.1f}  {mark}   (P={parts})")
    if args.profile:
        import cProfile
        import pstats
        prof = cProfile.Profile()
        entry = _LAST_ENTRY[0]
        with (_stubbed() if args.stub else contextlib.nullcontext()):
            prof.enable()
            for _ in range(args.calls * args.repeats):
                entry()
            prof.disable()
        pstats.Stats(prof).sort_stats("tottime").print_stats(15)
    return 0


if __name__ == "__main__":
    raise SystemExit(main())
