"""The torch custom op ``mla_cupy::mla_decode`` (docs/spec.md §12), for
``torch.compile(fullgraph=True)`` and torch CUDA graphs.  Needs torch >= 2.4;
``import mla_cupy`` never imports this module (``mla_cupy.torch_ops`` does, on
first use).

``torch.ops.mla_cupy.mla_decode(q, blocks, lookup_table, cache_lengths,
input_row_offsets, page_size, max_cache_length, q_max_seq_len, layer_idx,
scale, mask, window, attn_sink, num_partitions, scales, q_scale)`` returns
``(out [T, H, 512], lse [T, H] float32)``: :func:`mla_cupy.mla_decode` on a
``PagedKVCollection(blocks, lookup_table, cache_lengths, page_size, scales=scales,
max_cache_length=max_cache_length)``, dense, with ``return_lse=True``.
``q_max_seq_len`` and ``max_cache_length`` are host ints (nothing is read back
from the device inside a graph); ``scale`` None means ``D_qk ** -0.5``,
``num_partitions`` None the cost model's choice.  The fake (meta) impl gives
the shapes and dtypes without running anything, so the op traces without a
graph break.  :func:`mla_decode` below is the same call taking a collection.
"""
from __future__ import annotations

from typing import Optional

import torch

from . import records
from .cache import PagedKVCollection, _resolve_layout
from .dispatch import mla_decode as _mla_decode

OP_NAME = "mla_cupy::mla_decode"


@torch.library.custom_op(OP_NAME, mutates_args=())
def mla_decode_op(q: torch.Tensor, blocks: torch.Tensor, lookup_table: torch.Tensor,
                  cache_lengths: torch.Tensor, input_row_offsets: torch.Tensor, page_size: int,
                  max_cache_length: int, q_max_seq_len: int, layer_idx: int = 0,
                  scale: Optional[float] = None, mask: str = "causal", window: Optional[int] = None,
                  attn_sink: Optional[torch.Tensor] = None, num_partitions: Optional[int] = None,
                  scales: Optional[torch.Tensor] = None,
                  q_scale: Optional[torch.Tensor] = None) -> tuple[torch.Tensor, torch.Tensor]:
    kv = PagedKVCollection(blocks, lookup_table, cache_lengths, page_size, scales=scales,
                           max_cache_length=max_cache_length)
    extra = {} if q_scale is None else dict(q_scale_ptr=q_scale)
    return _mla_decode(q, kv, input_row_offsets, layer_idx=layer_idx, scale=scale, mask=mask,
                       window=window, attn_sink=attn_sink, num_partitions=num_partitions,
                       return_lse=True, q_max_seq_len=q_max_seq_len, **extra)


@mla_decode_op.register_fake
def _mla_decode_fake(q, blocks, lookup_table, cache_lengths, input_row_offsets, page_size,
                     max_cache_length, q_max_seq_len, layer_idx=0, scale=None, mask="causal",
                     window=None, attn_sink=None, num_partitions=None, scales=None, q_scale=None):
    # The collection's rule (docs/spec.md §4) on the concrete row width (a SymInt
    # under dynamic shapes cannot key its table).
    row = _RowOf(blocks.dtype, int(blocks.shape[-1]))
    layout = _resolve_layout(row, None)
    out_dtype = getattr(torch, records.output_dtype(layout))
    num_tokens, num_heads = q.shape[0], q.shape[1]
    return (q.new_empty((num_tokens, num_heads, records.D_V), dtype=out_dtype),
            q.new_empty((num_tokens, num_heads), dtype=torch.float32))


class _RowOf:
    """What layout inference reads of ``blocks``: its dtype and row width."""

    def __init__(self, dtype, width: int):
        self.dtype, self.shape = dtype, (0, 0, 0, width)


def mla_decode(q: torch.Tensor, kv_collection: PagedKVCollection, input_row_offsets: torch.Tensor, *,
               q_max_seq_len: int, layer_idx: int = 0, scale: Optional[float] = None,
               mask: str = "causal", window: Optional[int] = None,
               attn_sink: Optional[torch.Tensor] = None, num_partitions: Optional[int] = None,
               q_scale: Optional[torch.Tensor] = None, return_lse: bool = False):
    """:func:`mla_cupy.mla_decode` (dense) through the custom op: traceable by
    torch.compile; returns ``out`` or ``(out, lse)``."""
    kv = kv_collection
    out, lse = torch.ops.mla_cupy.mla_decode(
        q, kv.blocks, kv.lookup_table, kv.cache_lengths, input_row_offsets, kv.page_size,
        kv.max_cache_length, q_max_seq_len, layer_idx, scale, mask, window, attn_sink,
        num_partitions, kv.scales, q_scale)
    return (out, lse) if return_lse else out
