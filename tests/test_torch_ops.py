"""The torch custom op on the CPU (skipped without torch): its schema, the fake
impl's shapes and dtypes, and a torch.compile(fullgraph=True) trace that keeps
the op as one node (docs/spec.md §12).  The GPU run is in test_gpu_host.py."""
from __future__ import annotations

import pytest

torch = pytest.importorskip("torch")

import mla_cupy  # noqa: E402
from mla_cupy import PagedKVCollection, generic_flare_mla_decode_kv_cache_ragged  # noqa: E402

T, H, B, PAGE = 4, 16, 3, 64


def _fake_call(blocks_dtype, row, q_row=576, q_dtype=torch.bfloat16):
    from torch._subclasses.fake_tensor import FakeTensorMode
    with FakeTensorMode():
        q = torch.empty(T, H, q_row, dtype=q_dtype)
        blocks = torch.empty(10, 2, PAGE, row, dtype=blocks_dtype)
        table, lengths = torch.empty(B, 5, dtype=torch.int32), torch.empty(B, dtype=torch.int32)
        offsets = torch.empty(B + 1, dtype=torch.int32)
        return torch.ops.mla_cupy.mla_decode(q, blocks, table, lengths, offsets, PAGE, 100, 2)


@pytest.mark.parametrize("blocks_dtype,row,q_dtype,out_dtype", [
    (torch.bfloat16, 576, torch.bfloat16, torch.bfloat16),
    (torch.float16, 512, torch.float16, torch.float16),
    (torch.uint8, 656, torch.bfloat16, torch.bfloat16),
    (torch.float8_e4m3fn, 576, torch.bfloat16, torch.bfloat16),
])
def test_fake_impl_gives_the_output_shapes_and_dtypes(blocks_dtype, row, q_dtype, out_dtype):
    import mla_cupy.torch_ops  # noqa: F401 - registers the op
    out, lse = _fake_call(blocks_dtype, row, q_row=min(row, 576), q_dtype=q_dtype)
    assert tuple(out.shape) == (T, H, 512) and out.dtype == out_dtype
    assert tuple(lse.shape) == (T, H) and lse.dtype == torch.float32


def test_fake_impl_refuses_a_row_no_layout_has():
    import mla_cupy.torch_ops  # noqa: F401
    with pytest.raises(ValueError, match="^blocks: cannot infer a layout"):
        _fake_call(torch.uint8, 600)


def test_schema_and_lazy_module():
    ops = mla_cupy.torch_ops
    schema = str(torch.ops.mla_cupy.mla_decode.default._schema)
    assert schema.startswith("mla_cupy::mla_decode(Tensor q, Tensor blocks, Tensor lookup_table")
    assert schema.endswith("-> (Tensor, Tensor)")
    assert ops.OP_NAME == "mla_cupy::mla_decode"


class _Traced(Exception):
    pass


def test_torch_compile_fullgraph_keeps_the_op():
    from mla_cupy import torch_ops
    graphs = []

    def backend(gm, example_inputs):
        graphs.append(gm)

        def run(*args):       # no GPU here: stop after tracing
            raise _Traced
        return run

    class Decode(torch.nn.Module):
        def forward(self, q, blocks, table, lengths, offsets):
            kv = PagedKVCollection(blocks, table, lengths, PAGE, max_cache_length=100)
            out, lse = torch_ops.mla_decode(q, kv, offsets, q_max_seq_len=2, return_lse=True)
            return out.float() + lse[..., None]

    compiled = torch.compile(Decode(), fullgraph=True, backend=backend)
    args = (torch.zeros(T, H, 576, dtype=torch.bfloat16), torch.zeros(10, PAGE, 576, dtype=torch.bfloat16),
            torch.zeros(B, 5, dtype=torch.int32), torch.zeros(B, dtype=torch.int32),
            torch.zeros(B + 1, dtype=torch.int32))
    with pytest.raises(_Traced):
        compiled(*args)
    assert len(graphs) == 1
    calls = [n for n in graphs[0].graph.nodes if n.target is torch.ops.mla_cupy.mla_decode.default
             or n.target is torch.ops.mla_cupy.mla_decode]
    assert len(calls) == 1, graphs[0].code


def test_cpu_tensors_are_refused_by_name():
    kv = PagedKVCollection(torch.zeros(10, PAGE, 576, dtype=torch.bfloat16), torch.zeros(B, 5, dtype=torch.int32),
                           torch.zeros(B, dtype=torch.int32), PAGE, max_cache_length=100)
    sa = mla_cupy.ScalarArgs(None, B, 1, 1)
    with pytest.raises(TypeError, match="^kv_collection.blocks: expected a CUDA array"):
        generic_flare_mla_decode_kv_cache_ragged(
            torch.zeros(T, H, 576, dtype=torch.bfloat16), torch.zeros(B + 1, dtype=torch.int32), kv, 0, 0.1,
            torch.zeros(T, H, 512, dtype=torch.bfloat16), sa)
