"""Plans, CUDA-graph capture and the torch custom op on the GPU (marker ``gpu``;
docs/spec.md §12).

Every output starts NaN-filled; results are compared with the NumPy reference
and, where two paths run the same kernels with the same num_partitions, with
each other bit for bit.  Kernels compile on first use (no ``compiled_kernels``:
only a few variants run here).
"""
from __future__ import annotations

import numpy as np
import pytest

from mla_cupy import (PagedKVCollection, generic_flare_mla_decode_kv_cache_ragged, mla_decode,
                      pack_scalar_args, plan_decode)
from mla_cupy.testing import compare, fill_nan, make_case, nan_filled, reference, to_torch, tolerance_for

pytestmark = pytest.mark.gpu
NUM_SEQS, HEADS = 6, 16


def _case(rng):
    return make_case(rng, seq_lens=[1] * NUM_SEQS, cache_lens=rng.integers(1, 3000, NUM_SEQS),
                     num_heads=HEADS, sink="random")


def _host(x) -> np.ndarray:
    if hasattr(x, "detach"):
        return x.detach().float().cpu().numpy()
    return x.get().astype(np.float32)


def _bits(x) -> np.ndarray:
    """The raw bits (bf16 as uint16, float32 as uint32) for a bitwise comparison."""
    if hasattr(x, "detach"):
        import torch
        return x.detach().view(torch.int16 if x.element_size() == 2 else torch.int32).cpu().numpy()
    return x.get().view(np.uint16 if x.dtype.itemsize == 2 else np.uint32)


def _inputs(case, lib):
    """(q, offsets, kv, sink) as CuPy arrays or torch tensors."""
    if lib == "torch":
        t = to_torch
        kv = PagedKVCollection(t(case.blocks), t(case.lookup_table), t(case.cache_lengths),
                               case.page_size, max_cache_length=int(case.cache_lengths.max()))
        return t(case.q), t(case.input_row_offsets), kv, t(case.attn_sink)
    import cupy
    return (cupy.asarray(case.q), cupy.asarray(case.input_row_offsets), case.collection(cupy),
            cupy.asarray(case.attn_sink))


def _setup(rng, lib, num_partitions):
    """A case, its inputs, a ScalarArgs for all its sequences and NaN-filled out/lse."""
    case = _case(rng)
    q, offsets, kv, sink = _inputs(case, lib)
    sa = pack_scalar_args(NUM_SEQS, 1, kv.max_cache_length, HEADS, num_partitions=num_partitions)
    return (case, q, offsets, kv, sink, sa, *_outputs(case, q))


def _outputs(case, like):
    return (nan_filled((case.q.shape[0], HEADS, 512), case.out_dtype, like=like),
            nan_filled((case.q.shape[0], HEADS), np.float32, like=like))


def _check(case, out, lse, rows=slice(None)):
    ref_out, ref_lse = reference(case)
    cmp = compare(_host(out)[rows], _host(lse)[rows], ref_out[rows], ref_lse[rows],
                  tol=tolerance_for(case))
    assert cmp.ok, f"{case.describe()}: {cmp.message}"


def _sync():
    import cupy
    cupy.cuda.Device().synchronize()


@pytest.mark.parametrize("lib", ["cupy", "torch"])
@pytest.mark.parametrize("num_partitions", [1, 5])
def test_plan_run_equals_entry_bit_for_bit(rng, monkeypatch, lib, num_partitions):
    if lib == "torch":
        pytest.importorskip("torch")
    case, q, offsets, kv, sink, sa, out, lse = _setup(rng, lib, num_partitions)
    generic_flare_mla_decode_kv_cache_ragged(q, offsets, kv, 0, case.scale, out, sa, attn_sink_ptr=sink,
                                             lse=lse)
    generic_flare_mla_decode_kv_cache_ragged(q, offsets, kv, 0, case.scale, out, sa, attn_sink_ptr=sink,
                                             lse=lse)   # the memoised plan, into the same buffers
    _sync()
    _check(case, out, lse)
    plan = plan_decode(q, offsets, kv, 0, case.scale, out, sa, attn_sink_ptr=sink, lse=lse)
    assert plan.num_partitions == num_partitions
    runs = []
    for launch in ("driver", "cupy"):   # our cuLaunchKernel slots, then CuPy's own argument path
        monkeypatch.setenv("MLA_CUPY_LAUNCH", launch)
        p = plan if launch == "driver" else plan_decode(q, offsets, kv, 0, case.scale, out, sa,
                                                        attn_sink_ptr=sink, lse=lse)
        out2, lse2 = _outputs(case, q)
        p.run(q, out2, lse2)
        _sync()
        runs.append((out2, lse2))
    for out2, lse2 in runs:
        assert np.array_equal(_bits(out2), _bits(out)) and np.array_equal(_bits(lse2), _bits(lse)), \
            case.describe()


def test_steady_calls_allocate_nothing(rng):
    import cupy
    case, q, offsets, kv, sink, sa, out, lse = _setup(rng, "cupy", 4)
    plan = plan_decode(q, offsets, kv, 0, case.scale, out, sa, attn_sink_ptr=sink, lse=lse)
    call = lambda: generic_flare_mla_decode_kv_cache_ragged(  # noqa: E731
        q, offsets, kv, 0, case.scale, out, sa, attn_sink_ptr=sink, lse=lse)
    call()
    mla_decode(q, kv, offsets, scale=case.scale, attn_sink=sink, out=out, lse=lse, q_max_seq_len=1)
    pool = cupy.get_default_memory_pool()
    _sync()
    before = (pool.used_bytes(), pool.total_bytes())
    for _ in range(50):
        call()
        plan.run(q, out, lse)
        mla_decode(q, kv, offsets, scale=case.scale, attn_sink=sink, out=out, lse=lse, q_max_seq_len=1)
    assert (pool.used_bytes(), pool.total_bytes()) == before
    _sync()
    _check(case, out, lse)


# ------------------------------------------------------------------ torch.cuda.graph


@pytest.mark.parametrize("num_partitions", [1, 4])
def test_torch_graph_of_entry_replays_and_shrinks(rng, num_partitions):
    torch = pytest.importorskip("torch")
    case, q, offsets, kv, sink, sa, out, lse = _setup(rng, "torch", num_partitions)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    call = lambda: generic_flare_mla_decode_kv_cache_ragged(  # noqa: E731
        q, offsets, kv, 0, case.scale, out, sa, attn_sink_ptr=sink, lse=lse)   # stream: torch's current
    with torch.cuda.stream(stream):
        call()                                  # warm-up on the capture stream: plans, compiles
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        call()
    for x in (out, lse):
        fill_nan(x)
    graph.replay()
    torch.cuda.synchronize()
    _check(case, out, lse)
    sa.update(4, stream=stream)                 # same device buffer, ordered on the graph's stream
    with torch.cuda.stream(stream):
        out.fill_(7)
        lse.fill_(7)
        graph.replay()
    torch.cuda.synchronize()
    _check(case, out, lse, rows=slice(0, 4))
    assert (out[4:] == 7).all() and (lse[4:] == 7).all()


def test_torch_graph_of_plan_run_without_warm_up(rng):
    """A plan compiles and allocates when made, so its first run may be captured."""
    torch = pytest.importorskip("torch")
    case, q, offsets, kv, sink, sa, out, lse = _setup(rng, "torch", 3)
    plan = plan_decode(q, offsets, kv, 0, case.scale, out, sa, attn_sink_ptr=sink, lse=lse)
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph):
        plan.run(q, out, lse)
    eager_out, eager_lse = _outputs(case, q)
    plan.run(q, eager_out, eager_lse)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager_out) and torch.equal(lse, eager_lse)
    _check(case, out, lse)


def test_torch_graph_of_mla_decode(rng):
    torch = pytest.importorskip("torch")
    case = _case(rng)
    q, offsets, kv, sink = _inputs(case, "torch")
    out, lse = _outputs(case, q)
    stream = torch.cuda.Stream()
    stream.wait_stream(torch.cuda.current_stream())
    call = lambda: mla_decode(q, kv, offsets, scale=case.scale, attn_sink=sink, out=out, lse=lse,  # noqa: E731
                              q_max_seq_len=1)
    with torch.cuda.stream(stream):
        call()
    torch.cuda.synchronize()
    eager_out, eager_lse = out.clone(), lse.clone()
    graph = torch.cuda.CUDAGraph()
    with torch.cuda.graph(graph, stream=stream):
        call()
    fill_nan(out)
    fill_nan(lse)
    graph.replay()
    torch.cuda.synchronize()
    assert torch.equal(out, eager_out) and torch.equal(lse, eager_lse)
    _check(case, out, lse)


# ------------------------------------------------------------------ CuPy graphs


def test_cupy_graph_of_plan_run_replays_and_shrinks(rng):
    import cupy
    case, q, offsets, kv, sink, sa, out, lse = _setup(rng, "cupy", 4)
    plan = plan_decode(q, offsets, kv, 0, case.scale, out, sa, attn_sink_ptr=sink, lse=lse)
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        stream.begin_capture()
        plan.run(q, out, lse)                  # stream: CuPy's current one, the capturing stream
        graph = stream.end_capture()
        fill_nan(out)
        fill_nan(lse)
        graph.launch(stream)
    stream.synchronize()
    _check(case, out, lse)
    sa.update(3, stream=stream)
    with stream:
        out.fill(7)
        lse.fill(7)
        graph.launch(stream)
    stream.synchronize()
    _check(case, out, lse, rows=slice(0, 3))
    assert (out.get()[3:].astype(np.float32) == 7).all() and (lse.get()[3:] == 7).all()


# ------------------------------------------------------------------ custom op


def test_custom_op_under_torch_compile_fullgraph(rng):
    torch = pytest.importorskip("torch")
    from mla_cupy import torch_ops

    case = _case(rng)
    q, offsets, kv, sink = _inputs(case, "torch")

    max_len = int(case.cache_lengths.max())

    class Decode(torch.nn.Module):
        """What an engine compiles: the raw op on tensors (a collection object
        is built outside the graph, or not at all)."""

        def forward(self, q, blocks, table, lengths, offsets, sink):
            out, lse = torch.ops.mla_cupy.mla_decode(q, blocks, table, lengths, offsets, case.page_size,
                                                     max_len, 1, 0, case.scale, "causal", None, sink,
                                                     None, None, None)
            return out * 2, lse

    class DecodeWithCollection(torch.nn.Module):
        """The collection wrapper, with the collection held by the module."""

        def __init__(self, kv):
            super().__init__()
            self.kv = kv

        def forward(self, q, offsets, sink):
            out, lse = torch_ops.mla_decode(q, self.kv, offsets, q_max_seq_len=1, scale=case.scale,
                                            attn_sink=sink, return_lse=True)
            return out * 2, lse

    args = (q, kv.blocks, kv.lookup_table, kv.cache_lengths, offsets, sink)
    compiled = torch.compile(Decode(), fullgraph=True)
    got_out, got_lse = compiled(*args)
    wrapped_out, wrapped_lse = torch.compile(DecodeWithCollection(kv), fullgraph=True)(q, offsets, sink)
    eager_out, eager_lse = mla_decode(q, kv, offsets, scale=case.scale, attn_sink=sink, return_lse=True,
                                      q_max_seq_len=1)
    torch.cuda.synchronize()
    assert torch.equal(got_out, eager_out * 2) and torch.equal(got_lse, eager_lse)
    assert torch.equal(wrapped_out, eager_out * 2) and torch.equal(wrapped_lse, eager_lse)
    _check(case, eager_out, eager_lse)
    torch.library.opcheck(torch.ops.mla_cupy.mla_decode.default,
                          (q, kv.blocks, kv.lookup_table, kv.cache_lengths, offsets, case.page_size,
                           int(case.cache_lengths.max()), 1, 0, case.scale, "causal", None, sink,
                           None, None, None))
