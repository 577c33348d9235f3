"""Benchmark the dense decode kernels on the GPU, correctness first.

Usage:  PYTHONPATH=. python3 tools/bench.py [--configs NAME ...] [--repeats 30] [--json FILE]

For each configuration: build a random paged bf16 cache (random block table),
check 4 sequences against the NumPy reference, then time the call with CUDA
events, L2 flushed (256 MiB write) before every repeat, and print the median
in us, TB/s (KV bytes read once + q + out), TFLOP/s (2*H*S*N*(576+512) per
sequence) and the fraction of the roofline from ceilings measured in the same
run (device-to-device copy bandwidth; torch bf16 matmul).  A torch baseline
(gather the pages, bmm, softmax, bmm) runs beside it when torch is importable.
"""
from __future__ import annotations

import argparse
import datetime
import json
import math
import subprocess
import sys

import ml_dtypes
import numpy as np

CONFIGS = {
    # name: (batch, heads, q_len, cache_len, page_size)
    "b128_h16_s1_k8192_p64": (128, 16, 1, 8192, 64),
    "b128_h128_s1_k8192_p64": (128, 128, 1, 8192, 64),
    "b128_h16_s2_k8192_p64": (128, 16, 2, 8192, 64),
    "b32_h128_s1_k4096_p64": (32, 128, 1, 4096, 64),
    "b8_h16_s1_k65536_p64": (8, 16, 1, 65536, 64),
    "b64_h64_s1_k2048_p1": (64, 64, 1, 2048, 1),
}
# Sparse (DeepSeek-V3.2 style top-k): name: (batch, heads, q_len, cache_len, page_size, topk)
SPARSE_CONFIGS = {
    "sparse_b128_h128_s1_k32768_top2048_p64": (128, 128, 1, 32768, 64, 2048),
    "sparse_b128_h16_s1_k32768_top2048_p64": (128, 16, 1, 32768, 64, 2048),
    "sparse_ds_mla_b128_h128_s1_k32768_top2048_p64": (128, 128, 1, 32768, 64, 2048),
    "sparse_ds_mla_b128_h16_s1_k32768_top2048_p64": (128, 16, 1, 32768, 64, 2048),
}
CONFIGS.update({
    "ds_mla_b128_h16_s1_k8192_p64": (128, 16, 1, 8192, 64),
    "ds_mla_b128_h128_s1_k8192_p64": (128, 128, 1, 8192, 64),
})
ROW_BYTES = {"bf16": 1152, "fp8_ds_mla": 656}


def layout_of(name: str) -> str:
    """Configs named *ds_mla* use FlashMLA's DeepSeek-V3.2 656-byte fp8 record."""
    return "fp8_ds_mla" if "ds_mla" in name else "bf16"


def _events_median(fn, repeats, flush):
    import cupy
    times = []
    for _ in range(repeats):
        flush()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        fn()
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
    return float(np.median(times)), float(np.min(times))


def measure_ceilings():
    import cupy
    n = 1 << 30
    a = cupy.empty(n, dtype=np.uint8)
    b = cupy.empty(n, dtype=np.uint8)
    a.fill(1)
    t, _ = _events_median(lambda: b.__setitem__(Ellipsis, a), 10, lambda: None)
    bw = 2 * n / (t * 1e-6) / 1e12
    tflops = float("nan")
    try:
        import torch
        x = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        y = torch.randn(8192, 8192, device="cuda", dtype=torch.bfloat16)
        tm, _ = _events_median(lambda: x @ y, 10, lambda: None)
        tflops = 2 * 8192**3 / (tm * 1e-6) / 1e12
    except Exception:
        pass
    return bw, tflops


class WrongResult(Exception):
    """A kernel disagreed with the reference: its config is reported, not timed."""


def random_ds_mla_rows(shape):
    """Valid 656-byte records: random e4m3 bytes (NaN codes avoided), group
    scales 0.005 (latent values up to ~2.2), bf16 rope ~ N(0, 1)."""
    import cupy
    rows = cupy.random.randint(0, 256, size=shape + (656,), dtype=np.int32).astype(np.uint8)
    latent = rows[..., :512]
    latent[(latent & 0x7f) == 0x7f] -= 1
    rows[..., 512:528] = cupy.full(shape + (4,), 0.005, dtype=np.float32).view(np.uint8)
    rope = cupy.random.standard_normal(shape + (64,), dtype=np.float32).astype(ml_dtypes.bfloat16)
    rows[..., 528:] = rope.view(np.uint8)
    return rows


def build(batch, heads, q_len, cache_len, page_size, rng, layout="bf16"):
    import cupy
    from mla_cupy import PagedKVCollection
    n_keys = cache_len + q_len
    pages = math.ceil(n_keys / page_size)
    num_blocks = batch * pages
    if layout == "fp8_ds_mla":
        blocks = random_ds_mla_rows((num_blocks, 1, page_size))
    else:
        blocks = cupy.random.standard_normal((num_blocks, 1, page_size, 576), dtype=np.float32).astype(ml_dtypes.bfloat16)
    lookup = cupy.asarray(rng.permutation(num_blocks).reshape(batch, pages).astype(np.int32))
    lengths = cupy.full(batch, cache_len, dtype=np.int32)
    kv = PagedKVCollection(blocks, lookup, lengths, page_size, max_cache_length=cache_len)
    q = cupy.random.standard_normal((batch * q_len, heads, 576), dtype=np.float32).astype(ml_dtypes.bfloat16)
    offs = cupy.arange(0, batch * q_len + 1, q_len, dtype=np.int32)
    return kv, q, offs


def check_subset(kv, q, out, lse, q_len, scale, rng, n=4):
    """Reference for n sequences (results of one sequence do not depend on others)."""
    from mla_cupy.cache import PagedKVCollection
    from mla_cupy.reference import mla_decode_reference
    from mla_cupy.testing import compare
    batch = kv.batch_size
    worst = 0.0
    for b in rng.choice(batch, size=min(n, batch), replace=False):
        b = int(b)
        lk = kv.lookup_table[b:b + 1].get()
        used = np.unique(lk)
        host_blocks = np.zeros((lk.max() + 1,) + kv.blocks.shape[1:], kv.blocks.dtype)
        host_blocks[used] = kv.blocks[cupy_index(used)].get()
        sub = PagedKVCollection(host_blocks, lk, kv.cache_lengths[b:b + 1].get(), kv.page_size)
        qb = q[b * q_len:(b + 1) * q_len].get()
        ref_out, ref_lse = mla_decode_reference(qb, np.array([0, q_len], np.int32), sub, 0, scale)
        rows = slice(b * q_len, (b + 1) * q_len)
        cmp = compare(out[rows].get().astype(np.float32), lse[rows].get(), ref_out, ref_lse,
                      dtype=ml_dtypes.bfloat16, v_scale=max(1.0, float(np.abs(ref_out).max())))
        if not cmp.ok:
            raise WrongResult(f"sequence {b}: WRONG: {cmp.message}")
        worst = max(worst, cmp.max_err)
    return worst


def sparse_indices(kv, q_len, topk, rng):
    """Each token: topk distinct keys of its own sequence, as encoded physical rows."""
    import cupy
    batch = kv.batch_size
    n_keys = kv.max_cache_length + q_len
    lookup = kv.lookup_table.get().astype(np.int64)
    rows = np.empty((batch * q_len, topk), dtype=np.int32)
    for b in range(batch):
        for i in range(q_len):
            j = rng.choice(n_keys, size=topk, replace=False)
            rows[b * q_len + i] = lookup[b, j // kv.page_size] * kv.page_size + j % kv.page_size
    return cupy.asarray(rows)


def check_sparse_subset(kv, q, out, lse, q_len, scale, d_indices, rng, n=2):
    from mla_cupy.cache import PagedKVCollection
    from mla_cupy.reference import mla_decode_reference
    from mla_cupy.testing import compare
    host_blocks = kv.blocks.get()
    worst = 0.0
    for b in rng.choice(kv.batch_size, size=min(n, kv.batch_size), replace=False):
        b = int(b)
        rows = slice(b * q_len, (b + 1) * q_len)
        sub = PagedKVCollection(host_blocks, kv.lookup_table[b:b + 1].get(),
                                kv.cache_lengths[b:b + 1].get(), kv.page_size)
        ref_out, ref_lse = mla_decode_reference(q[rows].get(), np.array([0, q_len], np.int32), sub, 0,
                                                scale, sparse_mla=True, d_indices=d_indices[rows].get())
        cmp = compare(out[rows].get().astype(np.float32), lse[rows].get(), ref_out, ref_lse,
                      dtype=ml_dtypes.bfloat16)
        if not cmp.ok:
            raise WrongResult(f"sparse sequence {b}: WRONG: {cmp.message}")
        worst = max(worst, cmp.max_err)
    return worst


def cupy_index(a):
    import cupy
    return cupy.asarray(a)


def torch_baseline(kv, q, offs, heads, q_len, cache_len, scale):
    """Gather pages -> dense K, then two batched matmuls with a masked softmax (bf16)."""
    import torch
    blocks = torch.from_dlpack(kv.blocks.view(np.int16)).view(torch.bfloat16)
    lookup = torch.from_dlpack(kv.lookup_table).long()
    qt = torch.from_dlpack(q.view(np.int16)).view(torch.bfloat16)
    batch = lookup.shape[0]
    n = cache_len + q_len

    def run():
        k = blocks[lookup, 0].reshape(batch, -1, 576)[:, :n]          # [B, N, 576]
        qq = qt.view(batch, q_len * heads, 576)
        s = torch.bmm(qq, k.transpose(1, 2)).float() * scale
        p = torch.softmax(s, dim=-1).to(torch.bfloat16)
        return torch.bmm(p, k[..., :512])
    return run


def main(argv=None):
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--configs", nargs="*", default=list(CONFIGS) + list(SPARSE_CONFIGS))
    ap.add_argument("--repeats", type=int, default=30)
    ap.add_argument("--json", default=None)
    ap.add_argument("--commit", default=None, help="commit to record (the device copy has no git history)")
    args = ap.parse_args(argv)

    import cupy
    from mla_cupy import generic_flare_mla_decode_kv_cache_ragged, pack_scalar_args

    rng = np.random.default_rng()
    dev = cupy.cuda.Device()
    props = cupy.cuda.runtime.getDeviceProperties(dev.id)
    gpu = props["name"].decode()
    commit = args.commit or subprocess.run(["git", "rev-parse", "--short", "HEAD"],
                                           capture_output=True, text=True).stdout.strip() or "unknown"
    bw_peak, mm_peak = measure_ceilings()
    print(f"# {datetime.date.today()} {gpu} commit {commit}: copy {bw_peak:.2f} TB/s, "
          f"bf16 matmul {mm_peak:.0f} TFLOP/s", flush=True)
    flush_buf = cupy.empty(256 << 20, dtype=np.uint8)
    flush = lambda: flush_buf.fill(0)  # noqa: E731
    rows = []
    for name in args.configs:
        sparse = name in SPARSE_CONFIGS
        if sparse:
            batch, heads, q_len, cache_len, page_size, topk = SPARSE_CONFIGS[name]
        else:
            batch, heads, q_len, cache_len, page_size = CONFIGS[name]
        layout = layout_of(name)
        kv, q, offs = build(batch, heads, q_len, cache_len, page_size, rng, layout)
        scale = 576 ** -0.5
        out = cupy.empty((batch * q_len, heads, 512), dtype=ml_dtypes.bfloat16)
        lse = cupy.empty((batch * q_len, heads), dtype=np.float32)
        kw = {}
        if sparse:
            kw = dict(sparse_mla=True, d_indices=sparse_indices(kv, q_len, topk, rng),
                      indices_stride=topk)
        sa = pack_scalar_args(batch, q_len, cache_len, heads, sparse_mla=sparse,
                              indices_stride=topk if sparse else 0)
        call = lambda: generic_flare_mla_decode_kv_cache_ragged(  # noqa: E731
            q, offs, kv, 0, scale, out, sa, lse=lse, **kw)
        call()
        try:
            err = (check_sparse_subset(kv, q, out, lse, q_len, scale, kw["d_indices"], rng) if sparse
                   else check_subset(kv, q, out, lse, q_len, scale, rng))
        except WrongResult as e:
            print(f"{name:44s} NOT TIMED: {e}", flush=True)
            rows.append(dict(config=name, wrong=str(e)))
            continue
        med, best = _events_median(call, args.repeats, flush)
        n_keys = topk if sparse else cache_len + q_len
        kv_bytes = batch * n_keys * ROW_BYTES[layout] + q.nbytes + out.nbytes
        flops = 2 * batch * heads * q_len * n_keys * (576 + 512)
        tbs = kv_bytes / (med * 1e-6) / 1e12
        tfl = flops / (med * 1e-6) / 1e12
        floor_us = max(kv_bytes / (bw_peak * 1e12), flops / (mm_peak * 1e12)) * 1e6
        row = dict(config=name, num_partitions=sa.num_partitions, us=med, best_us=best,
                   tb_s=tbs, tflop_s=tfl, roofline=floor_us / med, max_err=err)
        try:
            if sparse or layout != "bf16":
                raise RuntimeError("no torch baseline for sparse or fp8")
            base = torch_baseline(kv, q, offs, heads, q_len, cache_len, scale)
            base()
            row["torch_us"], _ = _events_median(base, max(5, args.repeats // 3), flush)
        except Exception as e:  # noqa: BLE001 - a baseline that cannot run is reported, not fatal
            row["torch_us"] = float("nan")
            print(f"  torch baseline skipped: {e}", file=sys.stderr)
        rows.append(row)
        print(f"{name:44s} P={sa.num_partitions:2d} {med:9.1f} us  {tbs:5.2f} TB/s  {tfl:6.1f} TFLOP/s  "
              f"roofline {100 * row['roofline']:5.1f}%  torch {row['torch_us']:9.1f} us  err {err:.2e}",
              flush=True)
        kv = q = offs = out = lse = None   # free before the next config allocates
        cupy.get_default_memory_pool().free_all_blocks()
    if args.json:
        with open(args.json, "w") as f:
            json.dump(dict(date=str(datetime.date.today()), gpu=gpu, commit=commit,
                           copy_tb_s=bw_peak, matmul_tflop_s=mm_peak, rows=rows), f, indent=1)


if __name__ == "__main__":
    main()
