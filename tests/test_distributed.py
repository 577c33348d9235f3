"""Context-parallel decode on the CPU (docs/spec.md §13): the sharding against
brute force and vLLM's formula, and the whole scheme against the reference --
every rank's reference decode of its shard (local lengths, local window,
translated sparse rows, no sink), merged by log-sum-exp with the sink, must
equal the single-GPU reference of the whole cache.  No GPU, no torch."""
from __future__ import annotations

import subprocess
import sys

import numpy as np
import pytest

from mla_cupy.cache import PagedKVCollection
from mla_cupy.reference import merge_by_lse, mla_decode_reference
from mla_cupy.sharding import (Sharding, local_dense_lengths, positions_to_rows,
                               shard_cache_host)
from mla_cupy.testing import make_case, reference
from mla_cupy.testing import FakeCudaArray

# (layout, interleave_size, chunk_size, world_size)
SHARDINGS = [("interleave", 1, None, 2), ("interleave", 4, None, 2), ("interleave", 64, None, 2),
             ("interleave", 2, None, 3), ("contiguous", 1, 100, 2), ("contiguous", 1, 64, 3)]


def shardings(layout, interleave, chunk, world):
    return [Sharding(world, r, layout, interleave, chunk) for r in range(world)]


@pytest.mark.parametrize("spec", SHARDINGS, ids=str)
def test_mapping_matches_brute_force(spec):
    ranks = shardings(*spec)
    g = np.arange(1500)
    owner = ranks[0].owner(g)
    for s in ranks:
        mine = g[owner == s.rank]
        # a rank's keys sit at local positions 0, 1, 2, ... in increasing global order
        assert np.array_equal(s.local_position(mine), np.arange(len(mine)))
        assert np.array_equal(s.global_position(np.arange(len(mine))), mine)
        counts = np.array([np.count_nonzero(mine < n) for n in range(len(g) + 1)])
        assert np.array_equal(s.local_count(np.arange(len(g) + 1)), counts)
    assert sum(int(s.local_count(1234)) for s in ranks) == 1234


@pytest.mark.parametrize("interleave,world", [(1, 2), (1, 8), (16, 4), (64, 2)])
def test_local_count_is_vllms_dcp_local_seq_lens(interleave, world):
    """vLLM's get_dcp_local_seq_lens (vllm/v1/attention/backends/utils.py), written out."""
    n = np.arange(5000)
    for r in range(world):
        base = n // interleave // world * interleave
        vllm = base + np.clip(n - base * world - r * interleave, 0, interleave)
        assert np.array_equal(Sharding(world, r, "interleave", interleave).local_count(n), vllm)


@pytest.mark.parametrize("kwargs,exc,name", [
    (dict(world_size=0, rank=0), ValueError, "world_size"),
    (dict(world_size=2, rank=2), ValueError, "rank"),
    (dict(world_size=2, rank=True), TypeError, "rank"),
    (dict(world_size=2, rank=0, layout="striped"), ValueError, "layout"),
    (dict(world_size=2, rank=0, interleave_size=0), ValueError, "interleave_size"),
    (dict(world_size=2, rank=0, layout="contiguous"), ValueError, "chunk_size"),
    (dict(world_size=2, rank=0, layout="contiguous", chunk_size=8, interleave_size=2), ValueError,
     "interleave_size"),
    (dict(world_size=2, rank=0, chunk_size=8), ValueError, "chunk_size"),
])
def test_sharding_errors_name_the_argument(kwargs, exc, name):
    with pytest.raises(exc, match=f"^{name}: "):
        Sharding(**kwargs)


def test_local_window():
    assert Sharding(2, 1, "interleave", 64).local_window(4096) == 2048
    assert Sharding(1, 0).local_window(77) == 77
    with pytest.raises(ValueError, match="^window: .*multiple of 128"):
        Sharding(2, 0, "interleave", 64).local_window(4000)
    with pytest.raises(ValueError, match="^window: .*'interleave'"):
        Sharding(2, 0, "contiguous", chunk_size=64).local_window(128)


def _local_collection(kv_r, lengths, empty):
    """A rank's dense collection as the device builds it (mla_cp_prepare_dense):
    local lengths, and page 0 of an empty sequence pointed at block 0."""
    table = kv_r.lookup_table.copy()
    table[np.flatnonzero(empty), 0] = 0
    full = np.zeros(table.shape[0], np.uint32)
    full[:len(lengths)] = lengths
    return PagedKVCollection(kv_r.blocks, table, full, kv_r.page_size, scales=kv_r.scales,
                             layout=kv_r.layout, max_cache_length=int(full.max(initial=0)))


def cp_dense_reference(case, ranks):
    """Per-rank references of the shards, merged with the sink (what the ranks compute)."""
    offs = case.input_row_offsets.astype(np.int64)
    seq_lens = np.diff(offs)
    seq_of_row = np.repeat(np.arange(len(seq_lens)), seq_lens)
    outs, lses = [], []
    for s in ranks:
        kv_r = shard_cache_host(case.collection(), offs, s)
        lengths, empty = local_dense_lengths(s, case.cache_lengths[:len(seq_lens)], seq_lens)
        window = s.local_window(case.window) if case.mask == "sliding_window_causal" else -1
        out, lse = mla_decode_reference(case.q, case.input_row_offsets, _local_collection(kv_r, lengths, empty),
                                        case.layer_idx, case.scale, mask_str=case.mask,
                                        local_window_size=window, **case.fp8_kwargs())
        lse[empty[seq_of_row]] = -np.inf
        outs.append(out)
        lses.append(lse)
    return merge_by_lse(outs, lses, case.attn_sink)


def assert_same(got, want):
    (out, lse), (ref_out, ref_lse) = got, want
    assert np.array_equal(np.isneginf(lse), np.isneginf(ref_lse))
    finite = np.isfinite(ref_lse)
    np.testing.assert_allclose(lse[finite], ref_lse[finite], rtol=1e-12, atol=1e-12)
    np.testing.assert_allclose(out, ref_out, rtol=1e-9, atol=1e-12)


@pytest.mark.parametrize("spec", SHARDINGS, ids=str)
@pytest.mark.parametrize("mask", ["causal", "null"])
def test_dense_shards_merge_to_the_reference(rng, spec, mask):
    # short caches leave some ranks empty for some sequences (C=0, C=3 with I=64)
    case = make_case(rng, seq_lens=[1, 1, 0, 1, 1], cache_lens=[0, 3, 40, 700, 257], num_heads=4,
                     page_size=16, mask=mask, sink="random", num_layers=2, layer_idx=1)
    assert_same(cp_dense_reference(case, shardings(*spec)), reference(case))


@pytest.mark.parametrize("layout", ["fp8", "fp8_rope_aware", "fp8_ds_mla", "fp16"])
def test_dense_shards_merge_to_the_reference_fp8_fp16(rng, layout):
    case = make_case(rng, seq_lens=[1, 1], cache_lens=[130, 5], num_heads=2, page_size=8,
                     layout=layout, sink="random")
    assert_same(cp_dense_reference(case, shardings("interleave", 4, None, 2)), reference(case))


@pytest.mark.parametrize("interleave,world,window", [(1, 2, 2), (1, 2, 64), (4, 2, 8), (2, 3, 60)])
def test_sliding_window_shards_merge_to_the_reference(rng, interleave, world, window):
    case = make_case(rng, seq_lens=[1, 1, 1, 1], cache_lens=[0, 5, 300, 1001], num_heads=3,
                     page_size=16, mask="sliding_window_causal", window=window, sink="random")
    assert_same(cp_dense_reference(case, shardings("interleave", interleave, None, world)), reference(case))


def _sparse_case(rng, *, seq_lens, cache_lens, topk, fold=False, logical=True, extra=0):
    """A paged cache (make_case) with global top-k positions per token: in range,
    duplicated, -1, negative and past N_b; the single-GPU call reads the same
    positions through the whole table (Sharding(1, 0))."""
    case = make_case(rng, seq_lens=seq_lens, cache_lens=cache_lens, num_heads=4, page_size=16,
                     sink="random", mask="causal")
    offs = case.input_row_offsets.astype(np.int64)
    n_keys = (case.cache_lengths + np.diff(offs))[np.repeat(np.arange(len(seq_lens)), seq_lens)]
    pos = (rng.random((len(n_keys), topk)) * n_keys[:, None]).astype(np.int64)
    junk = rng.choice([-1, -7, 2**31 - 1], size=pos.shape)
    pos = np.where(rng.random(pos.shape) < 0.15, junk, pos)
    pos[:, -1] = n_keys        # one past the sequence: masked
    pos = pos.astype(np.int32)
    whole = Sharding(1, 0)
    sparse = dict(
        d_indices=positions_to_rows(whole, pos, offs, case.cache_lengths, case.lookup_table,
                                    case.page_size, case.blocks.shape[0]),
        topk_lengths=rng.integers(0, topk + 3, size=len(seq_lens)).astype(np.int32),
        logical_indices=pos.copy() if logical else None, extra_d_indices=None,
        extra_topk_lengths=None, fold_shared_index=fold)
    if extra:
        sparse.update(extra_d_indices=rng.integers(-1, 40, size=(len(n_keys), extra)).astype(np.int32),
                      extra_topk_lengths=np.full(len(seq_lens), extra, np.int32))
        extra_blocks = rng.standard_normal((4, 1, 8, 576)).astype(case.q.dtype)
        case.extra_blocks, case.extra_page_size = extra_blocks, 8
    case.sparse = sparse
    return case, pos


def cp_sparse_reference(case, pos, ranks):
    offs = case.input_row_offsets.astype(np.int64)
    outs, lses = [], []
    for s in ranks:
        kv_r = shard_cache_host(case.collection(), offs, s)
        kw = dict(case.sparse_kwargs())
        kw["d_indices"] = positions_to_rows(s, pos, offs, case.cache_lengths, kv_r.lookup_table,
                                            kv_r.page_size, kv_r.num_blocks)
        if s.rank != 0:      # rank 0 alone attends the extra stream
            for k in ("extra_k", "extra_d_indices", "extra_topk_lengths"):
                kw[k] = None
        out, lse = mla_decode_reference(case.q, case.input_row_offsets, kv_r, case.layer_idx,
                                        case.scale, mask_str=case.mask, **kw)
        outs.append(out)
        lses.append(lse)
    return merge_by_lse(outs, lses, case.attn_sink)


@pytest.mark.parametrize("spec", SHARDINGS, ids=str)
@pytest.mark.parametrize("fold,logical,extra", [(False, True, 0), (True, True, 0), (False, False, 6)])
def test_sparse_shards_merge_to_the_reference(rng, spec, fold, logical, extra):
    case, pos = _sparse_case(rng, seq_lens=[1, 3, 2, 0], cache_lens=[0, 200, 37, 5], topk=24,
                             fold=fold, logical=logical, extra=extra)
    assert_same(cp_sparse_reference(case, pos, shardings(*spec)), reference(case))


def test_positions_to_rows_rank_picks_its_own(rng):
    case = make_case(rng, seq_lens=[1, 2], cache_lens=[90, 30], num_heads=2, page_size=8)
    offs = case.input_row_offsets.astype(np.int64)
    pos = np.array([[0, 1, 2, 90, 91, -1], [5, 31, 32, 33, 4, 3], [0, 8, 9, 16, 17, 200]], np.int32)
    ranks = shardings("interleave", 8, None, 2)
    rows = [positions_to_rows(s, pos, offs, case.cache_lengths,
                              shard_cache_host(case.collection(), offs, s).lookup_table, 8, 10**6)
            for s in ranks]
    owner = ranks[0].owner(pos)
    n_keys = np.array([91, 32, 32])[:, None]
    in_range = (pos >= 0) & (pos < n_keys)
    for s, r in zip(ranks, rows):
        assert np.array_equal(r >= 0, in_range & (owner == s.rank))


def test_shard_cache_host_round_trip(rng):
    case = make_case(rng, seq_lens=[1, 1, 1], cache_lens=[0, 77, 300], num_heads=2, page_size=16,
                     layout="fp8_rope_aware")
    kv = case.collection()
    offs = case.input_row_offsets.astype(np.int64)
    for s in shardings("interleave", 4, None, 3):
        kv_r = shard_cache_host(kv, offs, s)
        for b, n in enumerate(case.cache_lengths + 1):
            loc = np.arange(int(s.local_count(n)))
            g = s.global_position(loc)
            want = case.blocks[case.lookup_table[b, g // 16], 0, g % 16]
            got = kv_r.blocks[kv_r.lookup_table[b, loc // 16], 0, loc % 16]
            assert np.array_equal(got, want)
            assert np.array_equal(kv_r.scales[kv_r.lookup_table[b, loc // 16], 0, loc % 16],
                                  case.scales[case.lookup_table[b, g // 16], 0, g % 16])


# ---- the device entry points: argument errors (fake device arrays, nothing launched)

def _fake_call(**over):
    from mla_cupy.distributed import ContextParallel
    kv = PagedKVCollection(FakeCudaArray((4, 64, 576), "bfloat16"), FakeCudaArray((2, 2), np.int32),
                           FakeCudaArray((2,), np.int32), 64, max_cache_length=100)
    args = dict(q=FakeCudaArray((2, 16, 576), "bfloat16"), kv_collection=kv,
                input_row_offsets=FakeCudaArray((3,), np.int32), q_max_seq_len=1)
    sharding = over.pop("sharding", Sharding(1, 0))
    args.update(over)
    return ContextParallel(sharding).decode(**args)


@pytest.mark.parametrize("over,exc,name", [
    (dict(q_max_seq_len=2), ValueError, "q_max_seq_len"),
    (dict(mask="sliding_window_causal", window=100, sharding=Sharding(1, 0, "contiguous", chunk_size=9)),
     None, None),
    (dict(mask="sliding_window_causal", window=100, sharding=Sharding(2, 0, "contiguous", chunk_size=9)),
     ValueError, "process_group, nccl_comm"),
    (dict(d_indices=FakeCudaArray((2, 8), np.int32), sparse_mla=True), ValueError, "d_indices"),
    (dict(topk_lengths=FakeCudaArray((2,), np.int32)), ValueError, "topk_lengths"),
    (dict(sparse_mla=True), TypeError, "topk_positions"),
    (dict(sparse_mla=True, topk_positions=FakeCudaArray((3, 8), np.int32)), ValueError, "topk_positions"),
    (dict(mask="diagonal"), ValueError, "mask_str"),
    (dict(kv_collection=None), TypeError, "kv_collection"),
])
def test_decode_errors_name_the_argument(over, exc, name, monkeypatch):
    import mla_cupy.distributed as D

    class PastValidation(Exception):
        pass

    def stop(*a, **k):
        raise PastValidation
    monkeypatch.setattr(D, "_device_id", stop)
    if exc is None:       # world 1: any window is exact (nothing is sharded)
        with pytest.raises(PastValidation):
            _fake_call(**over)
        return
    with pytest.raises(exc, match=f"^{name}: "):
        _fake_call(**over)


def test_window_error_on_a_sharded_rank(monkeypatch):
    import mla_cupy.distributed as D

    class FakeComm:
        def allGather(self, *a):
            raise AssertionError("nothing may be launched")

        def rank_id(self):
            return 0

        def size(self):
            return 2
    cp = D.ContextParallel(Sharding(2, 0, "interleave", 64), nccl_comm=FakeComm())
    kv = PagedKVCollection(FakeCudaArray((4, 64, 576), "bfloat16"), FakeCudaArray((2, 2), np.int32),
                           FakeCudaArray((2,), np.int32), 64, max_cache_length=100)
    with pytest.raises(ValueError, match="^window: .*multiple of 128"):
        cp.decode(FakeCudaArray((2, 16, 576), "bfloat16"), kv, FakeCudaArray((3,), np.int32),
                  q_max_seq_len=1, mask="sliding_window_causal", window=100)
    with pytest.raises(ValueError, match="^sharding: "):
        D.ContextParallel(Sharding(2, 1), nccl_comm=FakeComm())
    with pytest.raises(TypeError, match="^nccl_comm: "):
        D.ContextParallel(Sharding(2, 0), nccl_comm=object())


def test_import_mla_cupy_does_not_import_distributed_or_torch():
    code = ("import sys, mla_cupy; "
            "bad = [m for m in ('mla_cupy.distributed', 'mla_cupy.sharding', 'torch') if m in sys.modules]; "
            "assert not bad, bad")
    subprocess.run([sys.executable, "-c", code], check=True)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
def test_helper_kernels_compile_without_spills(arch):
    from mla_cupy.distributed import KERNELS, compile_offline
    log = compile_offline(arch)
    for name in KERNELS:
        assert f"Compiling entry function '{name}'" in log, log
    assert "bytes spill" in log and " 0 bytes spill stores, 0 bytes spill loads" in log
    assert all("0 bytes stack frame, 0 bytes spill stores, 0 bytes spill loads" in line
               for line in log.splitlines() if "spill" in line), log


def test_sparse_only_array_in_dense_mode_is_named(monkeypatch):
    import mla_cupy.distributed as D
    monkeypatch.setattr(D, "_device_id", lambda *a: (_ for _ in ()).throw(AssertionError("launched")))
    with pytest.raises(ValueError, match="^logical_indices: "):
        _fake_call(logical_indices=FakeCudaArray((2, 8), np.int32))
    with pytest.raises(ValueError, match="^fold_shared_index: "):
        _fake_call(fold_shared_index=True)
