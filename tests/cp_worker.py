"""One rank of the 2-GPU context-parallel test (tests/test_gpu_distributed.py starts two).

Every rank builds the same global case from the shared seed, cuts its own shard
(mla_cupy.sharding.shard_cache_host), runs ContextParallel.decode through
torch.distributed (NCCL) and through cupy.cuda.nccl, and compares the result
with the NumPy reference of the whole cache and with the single-GPU decode of
the whole cache on its own GPU.  Prints one ``CP-RESULT {json}`` line per run;
exits 1 if any run failed.

    python3 tests/cp_worker.py --rank R --world 2 --rendezvous DIR --seed N
"""
from __future__ import annotations

import argparse
import json
import os
import pickle
import sys
import time
import traceback

import numpy as np

HERE = os.path.dirname(os.path.abspath(__file__))
sys.path[:0] = [os.path.dirname(HERE), HERE]

from mla_cupy.cache import PagedKVCollection  # noqa: E402
from mla_cupy.sharding import Sharding, shard_cache_host  # noqa: E402
from mla_cupy.testing import (Tolerance, compare, fill_nan, make_case, nan_filled, reference,  # noqa: E402
                              run_gpu, to_torch, tolerance_for)

I1 = dict(layout="interleave", interleave_size=1)
I64 = dict(layout="interleave", interleave_size=64)


def dense_cases():
    """(name, sharding kwargs, make_case kwargs, decode kwargs)"""
    lens = dict(seq_lens=[1, 1, 1, 0, 1], cache_lens=[0, 1, 100, 7, 3000])
    return [
        ("dense_i1_causal_sink", I1, dict(**lens, num_heads=16, sink="random"), {}),
        ("dense_i64_null_h128", I64, dict(**lens, num_heads=128, mask="null"), {}),
        ("dense_i1_window256", I1, dict(seq_lens=[1, 1, 1], cache_lens=[5, 2000, 4097], num_heads=16,
                                        mask="sliding_window_causal", window=256, sink="random"), {}),
        ("dense_contiguous_1000", dict(layout="contiguous", chunk_size=1000),
         dict(seq_lens=[1, 1, 1, 1], cache_lens=[0, 999, 1000, 2500], num_heads=16, sink="random"), {}),
        ("dense_fp8_ds_mla_i64", I64, dict(seq_lens=[1, 1], cache_lens=[300, 5000], num_heads=16,
                                           layout="fp8_ds_mla", sink="random"), {}),
        ("dense_fp16_i1_forced_p4", I1, dict(seq_lens=[1, 1], cache_lens=[30, 900], num_heads=20,
                                             layout="fp16"), dict(num_partitions=4)),
        ("dense_long_100k_h128", I1, dict(seq_lens=[1], cache_lens=[100_000], num_heads=128,
                                          sink="random", spare_blocks=0), {}),
    ]


def sparse_cases():
    return [
        ("sparse_i1_causal_logical", I1, dict(seq_lens=[1, 3, 2], cache_lens=[0, 3000, 500], topk=256)),
        ("sparse_i64_fold_extra", I64, dict(seq_lens=[2, 1, 3], cache_lens=[70, 1500, 9], topk=128,
                                            fold=True, extra=16)),
        ("sparse_contiguous_slot_rule", dict(layout="contiguous", chunk_size=700),
         dict(seq_lens=[1, 2], cache_lens=[1200, 300], topk=64, logical=False)),
    ]


def run_case(cp, name, case, kw, cupy, *, torch_io=False, graph=False):
    """CP decode of ``case`` on this rank, compared with the reference and with the
    single-GPU decode."""
    s = cp.sharding
    offs = case.input_row_offsets
    host = shard_cache_host(case.collection(), offs.astype(np.int64), s)
    T, H = case.q.shape[0], case.num_heads
    put = to_torch if torch_io else cupy.asarray
    kv_r = PagedKVCollection(put(host.blocks), put(host.lookup_table), put(host.cache_lengths),
                             host.page_size, scales=None if host.scales is None else put(host.scales),
                             layout=host.layout, max_cache_length=host.max_cache_length)
    q = put(case.q)
    offs_d = put(offs)
    like = q if torch_io else None
    out = nan_filled((T, H, 512), case.out_dtype, like=like)
    lse = nan_filled((T, H), np.float32, like=like)
    args = dict(q_max_seq_len=case.q_max_seq_len, scale=case.scale, mask=case.mask,
                window=case.window if case.mask == "sliding_window_causal" else None,
                attn_sink=None if case.attn_sink is None else put(case.attn_sink), out=out, lse=lse,
                **case.fp8_kwargs(cupy), **kw)
    if graph:
        stream = cupy.cuda.Stream(non_blocking=True)
        with stream:
            cp.decode(q, kv_r, offs_d, stream=stream, **args)    # warm-up: buffers, kernels, NCCL
            stream.begin_capture()
            cp.decode(q, kv_r, offs_d, stream=stream, **args)
            g = stream.end_capture()
            fill_nan(out)
            fill_nan(lse)
            g.launch(stream)
        stream.synchronize()
    else:
        cp.decode(q, kv_r, offs_d, **args)
        cupy.cuda.runtime.deviceSynchronize()
    if torch_io:
        got_out, got_lse = out.float().cpu().numpy(), lse.cpu().numpy()
    else:
        got_out, got_lse = out.get().astype(np.float32), lse.get()
    ref_out, ref_lse = reference(case)
    tol = tolerance_for(case)
    vs_ref = compare(got_out, got_lse, ref_out, ref_lse, tol=tol)
    single_out, single_lse = run_gpu(case)
    vs_single = compare(got_out, got_lse, single_out, single_lse,
                        tol=Tolerance(2 * tol.atol, 2 * tol.rtol, 2 * tol.rel_rms))
    single_ok = compare(single_out, single_lse, ref_out, ref_lse, tol=tol).ok
    return dict(ok=vs_ref.ok and vs_single.ok, vs_reference=vs_ref.message, vs_single_gpu=vs_single.message,
                single_gpu_ok=single_ok, case=case.describe())


def main():
    ap = argparse.ArgumentParser()
    ap.add_argument("--rank", type=int, required=True)
    ap.add_argument("--world", type=int, required=True)
    ap.add_argument("--rendezvous", required=True)
    ap.add_argument("--seed", type=int, required=True)
    a = ap.parse_args()
    import cupy
    cupy.cuda.Device(a.rank).use()

    from mla_cupy.distributed import ContextParallel, make_nccl_comm, nccl_unique_id
    from test_distributed import _sparse_case

    comms = {}
    try:
        import torch
        import torch.distributed as dist
        torch.cuda.set_device(a.rank)
        dist.init_process_group("nccl", init_method=f"file://{a.rendezvous}/torch_store",
                                rank=a.rank, world_size=a.world)
        comms["torch"] = dict(process_group=dist.group.WORLD)
    except ImportError:
        print("torch not installed: the torch.distributed path is not run", flush=True)
    uid_path = os.path.join(a.rendezvous, "nccl_uid")
    if a.rank == 0:
        with open(uid_path + ".tmp", "wb") as f:
            pickle.dump(nccl_unique_id(), f)
        os.replace(uid_path + ".tmp", uid_path)
    deadline = time.time() + 60
    while not os.path.exists(uid_path):
        if time.time() > deadline:
            raise TimeoutError(f"no NCCL unique id at {uid_path}")
        time.sleep(0.05)
    with open(uid_path, "rb") as f:
        comms["nccl"] = dict(nccl_comm=make_nccl_comm(a.world, a.rank, pickle.load(f)))

    failed = 0

    def report(name, comm, fn):
        nonlocal failed
        try:
            res = fn()
        except Exception:   # noqa: BLE001 - report, keep the ranks in step is not possible: stop
            res = dict(ok=False, error=traceback.format_exc())
        res.update(name=name, comm=comm, rank=a.rank)
        failed += not res["ok"]
        print("CP-RESULT " + json.dumps(res), flush=True)
        if "error" in res:     # the other rank may be waiting in a collective: give up
            sys.exit(1)

    for comm_name, comm_kw in comms.items():
        for i, (name, skw, ckw, dkw) in enumerate(dense_cases()):
            cp = ContextParallel(Sharding(a.world, a.rank, **skw), **comm_kw)
            case = make_case(np.random.default_rng(a.seed + i), **ckw)
            report(name, comm_name, lambda: run_case(cp, name, case, dkw, cupy))
        for i, (name, skw, ckw) in enumerate(sparse_cases()):
            cp = ContextParallel(Sharding(a.world, a.rank, **skw), **comm_kw)
            case, pos = _sparse_case(np.random.default_rng(a.seed + 100 + i), **ckw)
            sp = case.sparse_kwargs(cupy)
            kw = dict(sparse_mla=True, topk_positions=cupy.asarray(pos), topk_lengths=sp["topk_lengths"],
                      logical_indices=sp["logical_indices"], fold_shared_index=sp["fold_shared_index"])
            if sp["extra_k"] is not None:
                kw.update(extra_k=sp["extra_k"], extra_d_indices=sp["extra_d_indices"],
                          extra_topk_lengths=sp["extra_topk_lengths"])
            report(name, comm_name, lambda: run_case(cp, name, case, kw, cupy))
    # torch tensors in and out, and a CUDA graph on the cupy NCCL path
    name, skw, ckw, dkw = dense_cases()[0]
    if "torch" in comms:
        cp = ContextParallel(Sharding(a.world, a.rank, **skw), **comms["torch"])
        case = make_case(np.random.default_rng(a.seed + 200), **ckw)
        report(name + "_torch_tensors", "torch", lambda: run_case(cp, name, case, dkw, cupy, torch_io=True))
    cp = ContextParallel(Sharding(a.world, a.rank, **skw), **comms["nccl"])
    case = make_case(np.random.default_rng(a.seed + 201), **ckw)
    report(name + "_cuda_graph", "nccl", lambda: run_case(cp, name, case, dkw, cupy, graph=True))
    if "torch" in comms:
        import torch.distributed as dist
        dist.destroy_process_group()
    sys.exit(1 if failed else 0)


if __name__ == "__main__":
    main()
