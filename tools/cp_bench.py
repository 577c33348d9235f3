"""Context-parallel decode benchmark: b=1, h=128, s_q=1, bf16 cache, page 64, at
128K / 512K / 1M keys, interleaved (vLLM DCP, interleave 1) over the ranks of
torchrun.  Prints a markdown table on rank 0.

    torchrun --standalone --nproc-per-node 2 tools/cp_bench.py     # 2 GPUs vs 1
    torchrun --standalone --nproc-per-node 1 tools/cp_bench.py     # 1 rank (CP path, no exchange)

GPU time per call from CUDA-graph replays (no host overhead), CUDA events over
``--iters`` back-to-back replays after a barrier, median of ``--repeats``:

* 1 GPU: the single-GPU decode of the whole cache, on rank 0;
* CP: ``ContextParallel.decode`` on every rank (cupy.cuda.nccl all-gather);
* local: ``ContextParallel.local_decode`` alone (the shard's decode);
* merge: ``ContextParallel.merge`` alone (all-gather + unpack + combine), with its
  share of the CP time;
* CP eager: one eager ``decode`` through torch.distributed, wall clock per call.

The caches hold random data; correctness is the tests' job (tests/test_gpu_distributed.py).
"""
from __future__ import annotations

import argparse
import os
import statistics
import sys
import time

for _k, _v in dict(NCCL_NVLS_ENABLE="0", TORCH_SYMM_MEM_DISABLE_MULTICAST="1", NVSHMEM_DISABLE_NVLS="1").items():
    os.environ[_k] = _v     # NVLink multicast stays off, whatever the caller set

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))

import ml_dtypes  # noqa: E402
import numpy as np  # noqa: E402

H, PAGE, D = 128, 64, 576


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--keys", type=int, nargs="+", default=[128 * 1024, 512 * 1024, 1024 * 1024])
    ap.add_argument("--iters", type=int, default=20)
    ap.add_argument("--repeats", type=int, default=5)
    ap.add_argument("--interleave", type=int, default=1)
    a = ap.parse_args()

    import cupy
    import torch
    import torch.distributed as dist

    rank, world = int(os.environ.get("RANK", 0)), int(os.environ.get("WORLD_SIZE", 1))
    local_rank = int(os.environ.get("LOCAL_RANK", rank))
    torch.cuda.set_device(local_rank)
    cupy.cuda.Device(local_rank).use()
    dist.init_process_group("nccl", device_id=torch.device("cuda", local_rank))

    from mla_cupy import PagedKVCollection, generic_flare_mla_decode_kv_cache_ragged, pack_scalar_args
    from mla_cupy.distributed import ContextParallel, make_nccl_comm, nccl_unique_id
    from mla_cupy.sharding import Sharding

    nccl_kw, torch_kw = {}, {}
    if world > 1:
        uid = [nccl_unique_id() if rank == 0 else None]
        dist.broadcast_object_list(uid, src=0)
        nccl_kw = dict(nccl_comm=make_nccl_comm(world, rank, uid[0]))
        torch_kw = dict(process_group=dist.group.WORLD)
    shard = Sharding(world, rank, "interleave", a.interleave)
    cp_nccl = ContextParallel(shard, **nccl_kw)
    cp_torch = ContextParallel(shard, **torch_kw)
    bf16 = ml_dtypes.bfloat16
    stream = cupy.cuda.Stream(non_blocking=True)

    def cache(n_keys, seed):
        pages = -(-n_keys // PAGE)
        rs = cupy.random.RandomState(seed)
        blocks = rs.standard_normal((pages, PAGE, D), dtype=np.float32).astype(bf16)
        return blocks, cupy.arange(pages, dtype=cupy.int32).reshape(1, pages)

    def sync(collective):
        stream.synchronize()
        cupy.cuda.runtime.deviceSynchronize()
        if collective:       # every rank times the same graph: start together
            dist.barrier()

    def time_graph(fn, collective=True):
        """µs per call of fn (captured), median over repeats; None + reason on failure.
        ``collective``: every rank runs this timing (else rank 0 alone: no barrier)."""
        try:
            with stream:
                fn()                      # warm-up: buffers, kernels, NCCL
                stream.begin_capture()
                fn()
                graph = stream.end_capture()
                graph.launch(stream)
        except Exception as e:   # noqa: BLE001 - reported in the table
            return None, f"{type(e).__name__}: {e}"
        times = []
        for _ in range(a.repeats):
            sync(collective)
            start, stop = cupy.cuda.Event(), cupy.cuda.Event()
            with stream:
                start.record(stream)
                for _ in range(a.iters):
                    graph.launch(stream)
                stop.record(stream)
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3 / a.iters)
        return statistics.median(times), None

    rows, notes = [], []
    for n_keys in a.keys:
        rs = cupy.random.RandomState(1234)
        q = rs.standard_normal((1, H, D), dtype=np.float32).astype(bf16)     # the same on every rank
        offs = cupy.asarray([0, 1], dtype=cupy.int32)
        scale = D ** -0.5
        t_single = None
        if rank == 0:
            blocks, table = cache(n_keys, 1)
            kv = PagedKVCollection(blocks, table, cupy.asarray([n_keys - 1], dtype=cupy.int32), PAGE,
                                   max_cache_length=n_keys - 1)
            out1 = cupy.empty((1, H, 512), dtype=bf16)
            sa = pack_scalar_args(1, 1, n_keys - 1, H)
            t_single, why = time_graph(lambda: generic_flare_mla_decode_kv_cache_ragged(
                q, offs, kv, 0, scale, out1, sa, stream=stream), collective=False)
            if why:
                notes.append(f"{n_keys} keys, 1 GPU: {why}")
            del blocks, kv
        dist.barrier()
        # this rank's shard: its local_count(N) keys, global cache length N - 1
        blocks, table = cache(int(shard.local_count(n_keys)), 2 + rank)
        kv_r = PagedKVCollection(blocks, table, cupy.asarray([n_keys - 1], dtype=cupy.int32), PAGE,
                                 max_cache_length=n_keys - 1)
        out = cupy.empty((1, H, 512), dtype=bf16)
        args = dict(q_max_seq_len=1, scale=scale)
        t_cp, why = time_graph(lambda: cp_nccl.decode(q, kv_r, offs, out=out, stream=stream, **args))
        t_local, why_l = time_graph(lambda: cp_nccl.local_decode(q, kv_r, offs, stream=stream, **args))
        part = cp_nccl.local_decode(q, kv_r, offs, stream=stream, **args)
        t_merge, why_m = time_graph(lambda: cp_nccl.merge(*part, offs, out=out, stream=stream))
        notes += [f"{n_keys} keys, {w}: {r}" for w, r in (("CP", why), ("local", why_l), ("merge", why_m)) if r]
        # eager, through torch.distributed, on torch's current stream
        for _ in range(3):
            cp_torch.decode(q, kv_r, offs, out=out, **args)
        torch.cuda.synchronize()
        dist.barrier()
        t0 = time.perf_counter()
        for _ in range(a.iters):
            cp_torch.decode(q, kv_r, offs, out=out, **args)
        torch.cuda.synchronize()
        t_eager = (time.perf_counter() - t0) * 1e6 / a.iters
        vals = torch.tensor([t_cp or float("nan"), t_local or float("nan"), t_merge or float("nan"), t_eager],
                            dtype=torch.float64, device="cuda")
        dist.all_reduce(vals, op=dist.ReduceOp.MAX)      # the slowest rank sets the pace
        rows.append((n_keys, t_single, *vals.tolist()))
        del blocks, kv_r
        cupy.get_default_memory_pool().free_all_blocks()

    if rank == 0:
        f = lambda v: "n/a" if v is None or v != v else f"{v:.1f}"   # noqa: E731
        print(f"\nb=1 h={H} s_q=1 bf16 page {PAGE}, layout interleave (I={a.interleave}), {world} rank(s), "
              f"{torch.cuda.get_device_name()}; µs per call, max over ranks, median of {a.repeats}x{a.iters} "
              f"graph replays\n")
        print(f"| keys | 1 GPU µs | CP {world} GPU µs | speed-up | local decode µs | merge µs | merge share | "
              f"CP eager µs (torch.distributed) |")
        print("|---|---|---|---|---|---|---|---|")
        for n, t1, tcp, tl, tm, te in rows:
            speed = f"{t1 / tcp:.2f}x" if t1 and tcp == tcp else "n/a"
            share = f"{100 * tm / tcp:.0f}%" if tm == tm and tcp == tcp else "n/a"
            print(f"| {n // 1024}K | {f(t1)} | {f(tcp)} | {speed} | {f(tl)} | {f(tm)} | {share} | {f(te)} |")
        for n in notes:
            print(f"note: {n}")
    dist.destroy_process_group()


if __name__ == "__main__":
    main()
