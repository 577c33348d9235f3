"""NumPy reference of the whole mla_cupy contract (docs/spec.md): the executable spec.

Every GPU kernel is tested against this module. It computes MLA decode attention
over a ragged batch and a paged latent KV cache in float64, for every layout
(bf16, fp16, fp8, fp8_rope_aware, fp8_ds_mla), every mask, dense and sparse
decode (with the extra stream, folded shared indices and logical positions) and
the attention sink.

It is deliberately simple: plain Python loops over sequences and query tokens,
NumPy vectorised over heads and keys within one token. Correctness comes before
speed, but a decode step with B=8, H=128 and 4096 keys per sequence still takes
well under a second.

Like the kernels, it reads only the cache rows, pages and table entries that a
visible key refers to, so NaN or out-of-range ids anywhere else cannot leak.
"""

from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = ["dequantize_rows", "merge_by_lse", "mla_decode_reference"]

D_V = 512  # output width: V is the latent part of the cached row
_E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
_BF16 = np.dtype(ml_dtypes.bfloat16)
_U8 = np.dtype(np.uint8)
_F16 = np.dtype(np.float16)
_MASKS = ("null", "causal", "sliding_window_causal")
# Allowed cache dtypes; fp8 data normally travels as uint8 bytes.
_CACHE_DTYPES = {
    "bf16": (_BF16,),
    "fp16": (_F16,),
    "fp8": (_U8, _E4M3),
    "fp8_rope_aware": (_U8, _E4M3),
    "fp8_ds_mla": (_U8, _E4M3),
}
# Allowed q dtypes; uint8 (or float8_e4m3fn) q means e4m3 values.
_Q_DTYPES = {
    "bf16": (_BF16,),
    "fp16": (_F16,),
    "fp8": (_BF16, _U8, _E4M3),
    "fp8_rope_aware": (_U8,),
    "fp8_ds_mla": (_BF16,),
}
# Fixed record widths in bytes; the other layouts store 576 or 512 values.
_RECORD_BYTES = {"fp8_rope_aware": 640, "fp8_ds_mla": 656}


def _names(dtypes):
    return [str(d) for d in dtypes]


def _le(raw, dtype):
    """Reinterpret bytes [n, k*size] as [n, k] values of the little-endian `dtype`."""
    return np.ascontiguousarray(raw).view(dtype)


def _bf16_le(raw):
    """Little-endian bf16 bytes [n, 2m] -> float64 [n, m]."""
    # bf16 is the top half of a float32; shifting is exact and host-endian independent.
    return (_le(raw, "<u2").astype(np.uint32) << 16).view(np.float32).astype(np.float64)


def dequantize_rows(rows, layout, scales=None, dequantize_to=None):
    """Decode cache rows to float64 ``(K [n, D_qk], V [n, 512])`` as docs/spec.md §4 says.

    ``dequantize_to="bfloat16"`` rounds fp8_ds_mla's scaled latent values
    (e4m3 * scale, formed in float32) to bf16, as the Hopper kernels do before
    their MMAs (docs/spec.md §4); None keeps them exact.

    ``rows`` is ``[..., row]`` (leading axes are flattened): bf16 / fp16 values for
    those layouts, uint8 bytes otherwise ("fp8" also takes float8_e4m3fn values).
    ``scales`` is the per-row σ (``[n]``) of "fp8_rope_aware" and is required there;
    other layouts ignore it.
    """
    if layout not in _CACHE_DTYPES:
        raise ValueError(f"layout: expected one of {sorted(_CACHE_DTYPES)}, got {layout!r}")
    rows = np.asarray(rows)
    rows = rows.reshape(-1, rows.shape[-1])
    width = rows.shape[1]
    if layout in _RECORD_BYTES:
        if width != _RECORD_BYTES[layout]:
            raise ValueError(f"rows: {layout} records are {_RECORD_BYTES[layout]} bytes, got {width}")
    elif width not in (512, 576):
        raise ValueError(f"rows: {layout} rows hold 576 or 512 values, got {width}")
    if rows.dtype not in _CACHE_DTYPES[layout]:
        raise TypeError(f"rows: layout {layout} expects dtype in {_names(_CACHE_DTYPES[layout])}, got {rows.dtype}")

    if layout in ("bf16", "fp16", "fp8"):
        k = (rows.view(_E4M3) if rows.dtype == _U8 else rows).astype(np.float64)
        return k, k[:, :D_V]

    rows = rows.view(_U8)
    latent = rows[:, :D_V].view(_E4M3).astype(np.float64)
    if layout == "fp8_rope_aware":
        if scales is None:
            raise ValueError("scales: fp8_rope_aware needs the per-token scales σ, got None")
        sigma = np.asarray(scales, dtype=np.float64).reshape(-1, 1)
        v = sigma * latent
        return np.concatenate([v, sigma * _bf16_le(rows[:, D_V:])], axis=1), v
    # fp8_ds_mla: four fp32 scales, one per 128 latent dims, then an unscaled bf16 rope.
    block_scales = _le(rows[:, D_V : D_V + 16], "<f4").astype(np.float64)
    v = latent * np.repeat(block_scales, 128, axis=1)
    if dequantize_to is not None:
        if dequantize_to != "bfloat16":
            raise ValueError(f"dequantize_to: expected None or 'bfloat16', got {dequantize_to!r}")
        v = v.astype(np.float32).astype(_BF16).astype(np.float64)
    return np.concatenate([v, _bf16_le(rows[:, D_V + 16 :])], axis=1), v


def _sink_factor(lse, sink):
    """e^lse / (e^lse + e^sink): the share of the softmax mass left to the keys.

    Written as 1 / (1 + e^(sink - lse)), which is the max trick over keys and sink
    in closed form: it cannot overflow into NaN, gives 1 for a -inf sink and 0 for
    a +inf one.
    """
    with np.errstate(over="ignore", invalid="ignore"):
        factor = 1.0 / (1.0 + np.exp(sink - lse))
    # An empty visible set has no mass to share (and -inf - -inf would be NaN).
    return np.where(np.isneginf(lse), 0.0, factor)


def merge_by_lse(outs, lses, sink=None):
    """Merge P partial results by log-sum-exp (the split-KV combine of docs/spec.md §7).

    ``outs`` ``[P, ..., D]`` are normalised partial outputs, ``lses`` ``[P, ...]``
    their LSEs; partials with LSE -inf are skipped whatever their output holds.
    ``sink`` (``[H]``, broadcast over the last axis of the LSE) is applied to the
    merged result. Returns ``(out [..., D], lse [...])``, the LSE without the sink.
    """
    outs = np.asarray(outs, dtype=np.float64)
    lses = np.asarray(lses, dtype=np.float64)
    top = lses.max(axis=0)
    top = np.where(np.isneginf(top), 0.0, top)
    empty = np.isneginf(lses)[..., None]
    with np.errstate(invalid="ignore", divide="ignore"):
        weights = np.exp(lses - top)
        total = weights.sum(axis=0)
        out = np.where(empty, 0.0, weights[..., None] * outs).sum(axis=0)
        out = np.where(total[..., None] > 0, out / total[..., None], 0.0)
        lse = top + np.log(total)
    if sink is not None:
        out = out * _sink_factor(lse, np.asarray(sink, dtype=np.float64))[..., None]
    return out, lse


def _attend(q, k, v, scale, sink):
    """Attention of one query token, all heads: q [H, D], k [n, D], v [n, 512].

    Returns (out [H, 512], lse [H]); out 0 and lse -inf when n == 0.
    """
    heads = q.shape[0]
    if k.shape[0] == 0:
        return np.zeros((heads, D_V)), np.full(heads, -np.inf)
    s = scale * (q @ k.T)
    top = s.max(axis=1, keepdims=True)
    p = np.exp(s - top)
    total = p.sum(axis=1)
    out = (p @ v) / total[:, None]
    lse = top[:, 0] + np.log(total)
    if sink is not None:
        out *= _sink_factor(lse, sink)[:, None]
    return out, lse


class _Stream:
    """One paged collection at one layer; decodes rows on demand."""

    def __init__(self, name, coll, layer_idx, layout, scales_fallback=None, dequantize_to=None):
        blocks = np.asarray(coll.blocks)
        if blocks.ndim != 4:
            raise ValueError(
                f"{name}.blocks: expected [num_blocks, num_layers, page_size, row], got shape {blocks.shape}"
            )
        if blocks.dtype not in _CACHE_DTYPES[layout]:
            raise TypeError(
                f"{name}.blocks: layout {layout} expects dtype in {_names(_CACHE_DTYPES[layout])}, got {blocks.dtype}"
            )
        if not 0 <= layer_idx < blocks.shape[1]:
            raise ValueError(f"layer_idx: expected 0 <= layer_idx < {blocks.shape[1]}, got {layer_idx}")
        self.layout = layout
        self.dequantize_to = dequantize_to
        self.page_size = int(coll.page_size)
        self.num_rows = blocks.shape[0] * self.page_size
        self.blocks = blocks[:, layer_idx]
        self.scales = None  # only fp8_rope_aware has per-token scales
        if layout == "fp8_rope_aware":
            scales = coll.scales if coll.scales is not None else scales_fallback
            if scales is None:
                raise ValueError(f"{name}.scales: fp8_rope_aware needs per-token scales, got None")
            self.scales = np.asarray(scales)[:, layer_idx]

    def read(self, block, slot):
        """Rows at (block, slot) pairs -> float64 (K, V)."""
        sigma = None if self.scales is None else self.scales[block, slot]
        return dequantize_rows(self.blocks[block, slot], self.layout, sigma, self.dequantize_to)

    def read_encoded(self, rows):
        """Rows given as encoded physical rows block * page_size + slot."""
        return self.read(rows // self.page_size, rows % self.page_size)

    def valid(self, rows):
        """Encoded rows that exist; anything else (-1, sentinels) is masked, never read."""
        return (rows >= 0) & (rows < self.num_rows)


def _used(length, stride, cap=None):
    """Slots in use: min(length, stride[, cap]), a negative length counting as 0."""
    return max(0, min(length, stride) if cap is None else min(length, stride, cap))


def _index_rows(name, arr, tokens, stride):
    """An index array as [T, stride] int64 (TypeError unless it holds integers)."""
    arr = np.asarray(arr)
    if arr.dtype.kind not in "iu":
        raise TypeError(f"{name}: expected an integer array (int32), got {arr.dtype}")
    stride = stride or arr.shape[-1]
    return arr.astype(np.int64).reshape(tokens, stride)


def mla_decode_reference(
    q,
    input_row_offsets,
    kv_collection,
    layer_idx,
    scale,
    *,
    mask_str="causal",
    local_window_size=-1,
    per_token_scale_rope_aware=False,
    sparse_mla=False,
    fold_shared_index=False,
    q_scale_ptr=None,
    d_indices=None,
    indices_stride=0,
    topk_lengths=None,
    attn_sink_ptr=None,
    extra_k=None,
    extra_d_indices=None,
    extra_indices_stride=0,
    extra_topk_lengths=None,
    extra_scales_ptr=None,
    logical_indices=None,
    dequantize_to=None,
) -> tuple[np.ndarray, np.ndarray]:
    """MLA decode attention per docs/spec.md §2-§6, in float64.

    Returns ``(out [T, H, 512], lse [T, H])``: the natural-log LSE over the visible
    keys, excluding the sink; -inf (and an out row of 0) when none is visible.

    ``kv_collection`` / ``extra_k`` need only ``blocks`` (4-D), ``lookup_table``,
    ``cache_lengths``, ``page_size``, ``scales`` and ``layout``. ``q_scale_ptr``
    (``[T]``) multiplies Q of each token in any layout; docs/spec.md §4 defines it for e4m3 q
    and fp8_rope_aware. ``indices_stride`` / ``extra_indices_stride`` of 0 mean the
    last dimension of the index array.  ``dequantize_to``: as in
    :func:`dequantize_rows` (the Hopper kernels' fp8_ds_mla rounding).
    """
    # Layout and mask may be str-valued enums (mla_cupy.variants) or plain strings.
    layout = getattr(kv_collection.layout, "value", kv_collection.layout)
    mask_str = getattr(mask_str, "value", mask_str)
    if layout not in _CACHE_DTYPES:
        raise ValueError(f"layout: expected one of {sorted(_CACHE_DTYPES)}, got {layout!r}")
    if mask_str not in _MASKS:
        raise ValueError(f"mask_str: expected one of {_MASKS}, got {mask_str!r}")
    sliding = mask_str == "sliding_window_causal"
    if sliding and local_window_size < 1:
        raise ValueError(f"local_window_size: sliding_window_causal needs W >= 1, got {local_window_size}")
    if per_token_scale_rope_aware != (layout == "fp8_rope_aware"):
        raise ValueError(
            f"per_token_scale_rope_aware: must be True exactly for layout fp8_rope_aware, "
            f"got {per_token_scale_rope_aware} with layout {layout}"
        )
    if sparse_mla and d_indices is None:
        raise ValueError("d_indices: sparse_mla needs d_indices, got None")
    if sparse_mla and sliding:
        raise ValueError(
            "mask_str: sliding_window_causal is not supported with sparse_mla; express the window as index lists"
        )
    if extra_k is not None and (not sparse_mla or extra_d_indices is None):
        raise ValueError("extra_k: the extra stream needs sparse_mla=True and extra_d_indices")
    if extra_k is not None and getattr(extra_k.layout, "value", extra_k.layout) != layout:
        raise ValueError(f"extra_k: expected layout {layout} like kv_collection, got {extra_k.layout}")

    offs = np.asarray(input_row_offsets).astype(np.int64)
    batch, tokens = len(offs) - 1, int(offs[-1])
    main = _Stream("kv_collection", kv_collection, layer_idx, layout, dequantize_to=dequantize_to)

    q = np.asarray(q)
    if q.dtype not in _Q_DTYPES[layout]:
        raise TypeError(f"q: layout {layout} expects dtype in {_names(_Q_DTYPES[layout])}, got {q.dtype}")
    d_qk = 576 if layout == "fp8_ds_mla" else main.blocks.shape[-1]
    if q.ndim != 3 or q.shape[0] != tokens or q.shape[2] != d_qk:
        raise ValueError(f"q: expected [{tokens}, H, {d_qk}], got shape {q.shape}")
    heads = q.shape[1]
    q_scale = None if q_scale_ptr is None else np.asarray(q_scale_ptr, dtype=np.float64).reshape(tokens)
    if layout == "fp8_rope_aware":
        sigma_q = np.ones(tokens) if q_scale is None else q_scale
        big_q, _ = dequantize_rows(q.reshape(-1, d_qk), layout, np.repeat(sigma_q, heads))
        big_q = big_q.reshape(tokens, heads, 576)
    else:
        big_q = (q.view(_E4M3) if q.dtype == _U8 else q).astype(np.float64)
        if q_scale is not None:
            big_q *= q_scale[:, None, None]

    sink = None if attn_sink_ptr is None else np.asarray(attn_sink_ptr, dtype=np.float64).reshape(heads)
    out = np.zeros((tokens, heads, D_V))
    lse = np.full((tokens, heads), -np.inf)
    cache_lengths = np.asarray(kv_collection.cache_lengths).astype(np.int64)

    if not sparse_mla:
        table = np.asarray(kv_collection.lookup_table).astype(np.int64)
        for b in range(batch):
            first_row, n_new = int(offs[b]), int(offs[b + 1] - offs[b])
            if n_new <= 0:
                continue
            cached = int(cache_lengths[b])
            n_keys = cached + n_new
            # Decode once per sequence the keys visible to at least one of its tokens.
            first = max(0, cached - local_window_size + 1) if sliding else 0
            j = np.arange(first, n_keys)
            k_seq, v_seq = main.read(table[b, j // main.page_size], j % main.page_size)
            for i in range(n_new):
                pos = cached + i
                start = max(0, pos - local_window_size + 1) - first if sliding else 0
                stop = n_keys - first if mask_str == "null" else pos + 1 - first
                t = first_row + i
                out[t], lse[t] = _attend(big_q[t], k_seq[start:stop], v_seq[start:stop], scale, sink)
        return out, lse

    indices = _index_rows("d_indices", d_indices, tokens, indices_stride)
    stride = indices.shape[1]
    logical = None if logical_indices is None else _index_rows("logical_indices", logical_indices, tokens, stride)
    topk = None if topk_lengths is None else np.asarray(topk_lengths).astype(np.int64)
    if extra_k is not None:
        # The extra stream's σ may come from extra_scales_ptr instead of extra_k.scales.
        extra = _Stream("extra_k", extra_k, layer_idx, layout, extra_scales_ptr, dequantize_to)
        extra_indices = _index_rows("extra_d_indices", extra_d_indices, tokens, extra_indices_stride)
        extra_stride = extra_indices.shape[1]
        extra_topk = None if extra_topk_lengths is None else np.asarray(extra_topk_lengths).astype(np.int64)

    for b in range(batch):
        first_row, n_new = int(offs[b]), int(offs[b + 1] - offs[b])
        cached = int(cache_lengths[b])
        n_used = _used(stride if topk is None else int(topk[b]), stride, cached + n_new)
        for i in range(n_new):
            t, pos = first_row + i, cached + i
            r = first_row if fold_shared_index else t
            rows = indices[r, :n_used]
            visible = main.valid(rows)
            if mask_str == "causal" and logical is None:
                visible &= np.arange(n_used) <= pos
            elif mask_str == "causal":
                visible &= (logical[r, :n_used] >= 0) & (logical[r, :n_used] <= pos)
            k, v = main.read_encoded(rows[visible])
            if extra_k is not None:
                n_extra = _used(extra_stride if extra_topk is None else int(extra_topk[b]), extra_stride)
                extra_rows = extra_indices[t, :n_extra]
                k_extra, v_extra = extra.read_encoded(extra_rows[extra.valid(extra_rows)])
                k, v = np.concatenate([k, k_extra]), np.concatenate([v, v_extra])
            out[t], lse[t] = _attend(big_q[t], k, v, scale, sink)
    return out, lse
