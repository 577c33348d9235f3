"""Check the Hopper (wgmma) decode family against the reference, then time it
beside the portable family on the issue-8 shapes.

Usage (GPU machine, from the checkout):  PYTHONPATH=. python3 tools/hopper_check.py [--quick]

Part 1: random dense cases (ragged lengths, every mask, page sizes 1..128,
D_qk 576/512, bf16/fp16, sinks, several num_partitions), outputs NaN-filled
before the launch, NaN in unused cache slots, permuted tables; each compared
with the NumPy reference.  Part 2: large shapes, hopper output compared with
the portable kernel's (itself tested against the reference), then GPU time of
both, captured in a CUDA graph so the host stays ahead, L2 flushed (512 MiB)
before every replay, median of 30.
"""
from __future__ import annotations

import argparse
import math
import os
import sys
import time

import ml_dtypes
import numpy as np


def run_case(case, backend, num_partitions):
    import cupy
    from mla_cupy import generic_flare_mla_decode_kv_cache_ragged, pack_scalar_args
    out = cupy.full((case.q.shape[0], case.num_heads, 512), np.nan,
                    dtype=np.float16 if case.kv_layout == "fp16" else ml_dtypes.bfloat16)
    lse = cupy.full((case.q.shape[0], case.num_heads), np.nan, dtype=np.float32)
    kv = case.collection(cupy)
    sa = pack_scalar_args(case.batch_size, case.q_max_seq_len, kv.max_cache_length,
                          case.num_heads, num_partitions=num_partitions, backend=backend)
    generic_flare_mla_decode_kv_cache_ragged(
        cupy.asarray(case.q), cupy.asarray(case.input_row_offsets), kv, case.layer_idx,
        case.scale, out, sa, mask_str=case.mask,
        local_window_size=case.window if case.mask == "sliding_window_causal" else -1,
        attn_sink_ptr=None if case.attn_sink is None else cupy.asarray(case.attn_sink),
        lse=lse, backend=backend)
    return out.get().astype(np.float32), lse.get(), sa.num_partitions


def correctness(quick: bool) -> int:
    from mla_cupy import testing
    seed = int(os.environ.get("MLA_CUPY_SEED") or np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    print(f"seed {seed}")
    cases = []
    for page in (1, 3, 16, 64, 128):
        for mask in ("causal", "null", "sliding_window_causal"):
            cases.append(dict(page_size=page, mask=mask))
    cases += [dict(d_qk=512), dict(dtype=np.float16), dict(num_heads=128), dict(num_heads=1),
              dict(num_heads=20, seq_lens=[3, 1, 4, 2]), dict(num_heads=64, seq_lens=[1, 2]),
              dict(sink="random"), dict(num_heads=128, seq_lens=[2, 1], mask="null"),
              dict(dtype=np.float16, d_qk=512, mask="sliding_window_causal")]
    fails = 0
    for i, kw in enumerate(cases[: 8 if quick else None]):
        kw = dict(kw)
        n = int(rng.integers(1, 6))
        seq_lens = kw.pop("seq_lens", list(rng.integers(1, 4, size=n)))
        cache_lens = list(rng.integers(0, 3000, size=len(seq_lens)))
        cache_lens[0] = 0 if len(seq_lens) > 2 else cache_lens[0]
        mask = kw.pop("mask", "causal")
        window = int(rng.integers(1, 1500)) if mask == "sliding_window_causal" else -1
        kw.setdefault("num_heads", int(rng.choice([16, 32, 128])))
        kw.setdefault("sink", "random" if rng.random() < 0.3 else None)
        case = testing.make_case(rng, seq_lens=seq_lens, cache_lens=cache_lens, mask=mask,
                                 window=window, **kw)
        ref_out, ref_lse = testing.reference(case)
        for p in (1, int(rng.integers(2, 9))):
            out, lse, _ = run_case(case, "hopper", p)
            cmp = testing.compare(out, lse, ref_out, ref_lse, tol=testing.tolerance_for(case))
            fails += not cmp.ok
            print(f"{'PASS' if cmp.ok else 'FAIL'} case {i} P={p} {case.describe()}: {cmp.message}",
                  flush=True)
    return fails


def _graph(fn, stream):
    fn()                     # warm up: compile, workspace
    stream.synchronize()
    stream.begin_capture()
    fn()
    return stream.end_capture()


def timing(repeats: int) -> None:
    import cupy
    from mla_cupy import PagedKVCollection, generic_flare_mla_decode_kv_cache_ragged, pack_scalar_args
    bf16 = ml_dtypes.bfloat16
    flush_buf = cupy.empty(512 << 20, dtype=np.uint8)
    shapes = [  # name, batch, q_len, heads, cache_len (keys incl. new tokens), varlen
        ("b128_h16_s8192", 128, 1, 16, 8192, False),
        ("b128_h128_s8192", 128, 1, 128, 8192, False),
        ("b128_sq2_h128_varlen", 128, 2, 128, 8192, True),
        ("b1_h128_s65536", 1, 1, 128, 65536, False),
        ("b8_h16_s8192", 8, 1, 16, 8192, False),
        ("b32_h128_s4096", 32, 1, 128, 4096, False),
    ]
    rng = np.random.default_rng(0)
    stream = cupy.cuda.Stream(non_blocking=True)
    from mla_cupy.render import hopper_tile
    from mla_cupy.variants import DecodeKey
    print("hopper tile (keys, buffers):", hopper_tile(DecodeKey(backend="hopper")))
    print(f"{'case':24s} {'backend':9s} {'P':>3s} {'us':>9s} {'TB/s':>6s} {'TFLOP/s':>8s}  max|hop-port|")
    for name, b, s_q, h, n_keys, varlen in shapes:
        page = 64
        if varlen:
            lens = np.maximum(rng.normal(8192, 4096, size=b).astype(np.int64), 2)
        else:
            lens = np.full(b, n_keys, dtype=np.int64)
        pages = (lens + page - 1) // page
        total_pages = int(pages.sum())
        with stream:
            blocks = cupy.random.standard_normal((total_pages, page, 576), dtype=np.float32).astype(bf16)
            perm = cupy.random.permutation(total_pages).astype(np.int32).get()
        table = np.full((b, int(pages.max())), 2**31 - 1, dtype=np.int64)
        at = 0
        for i in range(b):
            table[i, : pages[i]] = perm[at: at + pages[i]]
            at += pages[i]
        cache_lengths = (lens - s_q).astype(np.int32)
        kv = PagedKVCollection(blocks, cupy.asarray(table.astype(np.uint32)), cupy.asarray(cache_lengths),
                               page, max_cache_length=int(cache_lengths.max()))
        offsets = cupy.asarray(np.arange(b + 1, dtype=np.int32) * s_q)
        q = cupy.random.standard_normal((b * s_q, h, 576), dtype=np.float32).astype(bf16)
        flops = float(2 * h * s_q * lens.sum() * (576 + 512))
        nbytes = float(lens.sum() * 1152 + q.nbytes + b * s_q * h * 1024)
        outs = {}
        ctas = b * math.ceil(s_q * h / 64)
        hopper_p = max(1, min(64, round(132 / ctas)))
        for backend, p in (("portable", None), ("hopper", hopper_p), ("hopper", 1 if hopper_p != 1 else 2)):
            out = cupy.full((b * s_q, h, 512), np.nan, dtype=bf16)
            sa = pack_scalar_args(b, s_q, kv.max_cache_length, h, num_partitions=p, backend=backend)
            call = lambda: generic_flare_mla_decode_kv_cache_ragged(
                q, offsets, kv, 0, 576 ** -0.5, out, sa, mask_str="causal", stream=stream,
                backend=backend)
            graph = _graph(call, stream)
            times = []
            for _ in range(repeats):
                with stream:
                    flush_buf.fill(1)
                start, stop = cupy.cuda.Event(), cupy.cuda.Event()
                start.record(stream)
                graph.launch(stream)
                stop.record(stream)
                stop.synchronize()
                times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
            us = float(np.median(times))
            o = out.get().astype(np.float32)
            outs.setdefault(backend, o)
            diff = float(np.nanmax(np.abs(o - outs["portable"]))) if not np.isnan(o).any() else float("nan")
            print(f"{name:24s} {backend:9s} {sa.num_partitions:3d} {us:9.1f} {nbytes / us / 1e6:6.2f} "
                  f"{flops / us / 1e6:8.1f}  {diff:.3e}", flush=True)
        del blocks, kv, q


def main() -> int:
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--no-timing", action="store_true")
    ap.add_argument("--no-correctness", action="store_true")
    ap.add_argument("--repeats", type=int, default=30)
    a = ap.parse_args()
    t0 = time.time()
    fails = 0
    if not a.no_correctness:
        fails = correctness(a.quick)
        print(f"correctness: {fails} failures ({time.time() - t0:.0f} s)", flush=True)
    if not a.no_timing:
        timing(a.repeats)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
