"""Hostile test cases and the comparison the GPU tests, the CLI ``check`` and
the benchmark share (NumPy only; ``upload`` imports CuPy).

A case is built on the host: random latent rows for every visible key, NaN in
every slot and page that no visible key uses, block tables permuted at random,
sentinel page ids (2**31 - 1) in table entries no visible key needs.

fp8 layouts (``layout=`` of :func:`make_case` / :func:`make_sparse_case`): the same
float32 rows are drawn (same seed, same rows as the bf16 case) and quantised with
:mod:`mla_cupy.quantize`; unused slots hold 0xff bytes (NaN as e4m3, float32 and
bf16 alike) and, for fp8_rope_aware, NaN scales.
"""
from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np

from .cache import PagedKVCollection
from .quantize import (RECORD_BYTES, dequantize, quantize_fp8, quantize_fp8_ds_mla,
                       quantize_fp8_rope_aware, quantize_q_rope_aware)
from .variants import D_V

SENTINEL_PAGE = 2**31 - 1
LAYOUTS = ("bf16", "fp16", "fp8", "fp8_rope_aware", "fp8_ds_mla")
FP8_LAYOUTS = ("fp8", "fp8_rope_aware", "fp8_ds_mla")
NAN_BYTE = 0xFF   # NaN as e4m3 (and, repeated, as float32 and bf16): the bytes of unused slots


@dataclasses.dataclass
class Case:
    """Host arrays of one dense call plus the arguments that produced them."""

    q: np.ndarray
    input_row_offsets: np.ndarray
    blocks: np.ndarray           # [num_blocks, num_layers, page_size, d_qk]
    lookup_table: np.ndarray
    cache_lengths: np.ndarray
    page_size: int
    layer_idx: int
    scale: float
    mask: str
    window: int
    attn_sink: np.ndarray | None
    num_partitions: int | None
    # sparse mode: d_indices, topk_lengths, logical_indices, extra_d_indices,
    # extra_topk_lengths (arrays or None) and fold_shared_index
    sparse: dict | None = None
    extra_blocks: np.ndarray | None = None
    extra_page_size: int = 1
    # fp8 layouts: blocks are uint8 records; None means a bf16/fp16 case whose q dtype decides
    layout: str | None = None
    scales: np.ndarray | None = None         # fp8_rope_aware: σ [num_blocks, num_layers, page_size]
    extra_scales: np.ndarray | None = None   # the same for extra_blocks
    q_scale: np.ndarray | None = None        # [T] float32, passed as q_scale_ptr
    extreme: bool = False                    # rows with ±448·σ and e4m3-subnormal values

    @property
    def kv_layout(self) -> str:
        """The cache layout: ``layout`` when set, else bf16 / fp16 from q's dtype."""
        if self.layout is not None:
            return self.layout
        return "fp16" if self.q.dtype == np.dtype(np.float16) else "bf16"

    @property
    def batch_size(self) -> int:
        return len(self.input_row_offsets) - 1

    @property
    def num_heads(self) -> int:
        return self.q.shape[1]

    @property
    def q_max_seq_len(self) -> int:
        return int(np.diff(self.input_row_offsets).max()) if self.batch_size else 0

    def _layout_kwargs(self, scales, xp) -> dict:
        kw = {}
        if self.kv_layout in FP8_LAYOUTS:
            kw["layout"] = self.kv_layout
        if scales is not None:
            kw["scales"] = xp.asarray(scales)
        return kw

    def collection(self, xp=np) -> PagedKVCollection:
        return PagedKVCollection(xp.asarray(self.blocks), xp.asarray(self.lookup_table),
                                 xp.asarray(self.cache_lengths), self.page_size,
                                 max_cache_length=int(self.cache_lengths.max(initial=0)),
                                 **self._layout_kwargs(self.scales, xp))

    def extra_collection(self, xp=np) -> PagedKVCollection | None:
        if self.extra_blocks is None:
            return None
        batch = self.batch_size
        return PagedKVCollection(xp.asarray(self.extra_blocks),
                                 xp.zeros((batch, 1), dtype=np.int32),
                                 xp.zeros(batch, dtype=np.int32), self.extra_page_size,
                                 max_cache_length=0, **self._layout_kwargs(self.extra_scales, xp))

    def fp8_kwargs(self, xp=np) -> dict:
        """``q_scale_ptr`` and ``per_token_scale_rope_aware`` where the case has them."""
        kw = {}
        if self.q_scale is not None:
            kw["q_scale_ptr"] = xp.asarray(self.q_scale)
        if self.kv_layout == "fp8_rope_aware":
            kw["per_token_scale_rope_aware"] = True
        return kw

    def sparse_kwargs(self, xp=np) -> dict:
        """Keyword arguments of the sparse entry points (arrays moved with xp)."""
        if self.sparse is None:
            return {}
        kw = {k: (xp.asarray(v) if isinstance(v, np.ndarray) else v) for k, v in self.sparse.items()}
        kw["sparse_mla"] = True
        kw["extra_k"] = self.extra_collection(xp)
        return kw

    def describe(self) -> str:
        s = np.diff(self.input_row_offsets).tolist()
        d_qk = 576 if self.kv_layout in RECORD_BYTES else self.q.shape[2]
        text = (f"B={self.batch_size} H={self.num_heads} d_qk={d_qk} layout={self.kv_layout} "
                f"dtype={self.q.dtype} page={self.page_size} mask={self.mask} W={self.window} "
                f"S={s} C={self.cache_lengths.tolist()} sink={self.attn_sink is not None} "
                f"P={self.num_partitions} layer={self.layer_idx}/{self.blocks.shape[1]}")
        if self.q_scale is not None:
            text += " q_scale=per-token"
        if self.extreme:
            text += " extreme"
        if self.sparse is not None:
            sp = self.sparse
            text += (f" sparse: stride={sp['d_indices'].shape[1]} fold={sp['fold_shared_index']} "
                     f"topk={None if sp['topk_lengths'] is None else sp['topk_lengths'].tolist()} "
                     f"logical={sp['logical_indices'] is not None} "
                     f"extra={None if sp['extra_d_indices'] is None else sp['extra_d_indices'].shape[1]}"
                     f"/page {self.extra_page_size}")
        return text


def visible_key_range(cache_len: int, seq_len: int, mask: str, window: int) -> tuple[int, int]:
    """Keys [lo, hi) that at least one query token of the sequence sees."""
    hi = cache_len + seq_len
    lo = max(0, cache_len - window + 1) if mask == "sliding_window_causal" else 0
    return (lo, hi) if seq_len > 0 else (0, 0)


# ------------------------------------------------------------------ fp8 layouts

_E4M3_SUBNORMALS = np.array([1.0, 2.0, 3.0, 7.0]) * 2.0**-9   # smallest, next, odd, largest


def _resolve_layout(layout, dtype, d_qk, q_fp8, extreme):
    """Check the layout keywords; return (layout, numpy dtype of 16-bit data) -- the
    second is the q dtype of the bf16/fp16 layouts and bf16 for the fp8 ones."""
    layout = getattr(layout, "value", layout)
    if layout not in LAYOUTS:
        raise ValueError(f"layout: expected one of {LAYOUTS}, got {layout!r}")
    bf16, f16 = np.dtype(ml_dtypes.bfloat16), np.dtype(np.float16)
    given = None if dtype is None else np.dtype(bf16 if isinstance(dtype, str) and dtype == "bfloat16" else dtype)
    if layout == "fp16":
        if given not in (None, f16):
            raise ValueError(f"dtype: layout 'fp16' means float16, got dtype={dtype!r}")
        np_dtype = f16
    elif layout in FP8_LAYOUTS:
        if given not in (None, bf16):
            raise ValueError(f"dtype: layout {layout!r} has bf16 (or e4m3) queries, got dtype={dtype!r}")
        np_dtype = bf16
    else:                    # legacy: dtype decides between bf16 and fp16
        np_dtype = bf16 if given is None else given
        layout = "fp16" if np_dtype == f16 else "bf16"
    if layout in RECORD_BYTES and d_qk != 576:
        raise ValueError(f"d_qk: layout {layout!r} stores 576-dim rows, got d_qk={d_qk}")
    if q_fp8 and layout != "fp8":
        raise ValueError(f"q_fp8: e4m3 queries go with layout 'fp8' only, got layout={layout!r}")
    if extreme and layout not in FP8_LAYOUTS:
        raise ValueError(f"extreme: needs an fp8 layout, got layout={layout!r}")
    return layout, np_dtype


def _live(blocks) -> np.ndarray:
    """Slots holding a row: float rows without NaN, or fp8 records whose first byte is not NaN."""
    if blocks.dtype == np.uint8:
        return (blocks[..., 0] & 0x7F) != 0x7F
    return ~np.isnan(np.asarray(blocks[..., 0], dtype=np.float32))


def _add_extremes(rng, blocks, layout):
    """In place, on float32 rows: about a quarter of the live rows (at least one) get, in
    each scale group, entries ±max (encoded ±448), e4m3 subnormals times the group's σ,
    one value that flushes to 0 and, for unit-scale fp8, one that saturates."""
    flat = blocks.reshape(-1, blocks.shape[-1])
    live = np.flatnonzero(_live(blocks).reshape(-1))
    if live.size == 0:
        return
    d = blocks.shape[-1]
    groups = {"fp8": [(0, d)], "fp8_rope_aware": [(0, 512)],
              "fp8_ds_mla": [(g, g + 128) for g in range(0, 512, 128)]}[layout]
    for r in rng.choice(live, size=max(1, live.size // 4), replace=False):
        for lo, hi in groups:
            g = flat[r, lo:hi]
            top = 448.0 if layout == "fp8" else float(np.abs(g).max())
            if top == 0.0:
                continue
            sigma = top / 448.0
            signs = rng.choice([-1.0, 1.0], size=len(_E4M3_SUBNORMALS) + 1)
            vals = [top, -top, *(signs[:-1] * _E4M3_SUBNORMALS * sigma), signs[-1] * 2.0**-11 * sigma]
            if layout == "fp8":
                vals.append(float(rng.choice([-1.0, 1.0]) * rng.uniform(449.0, 2000.0)))
            g[rng.choice(hi - lo, size=len(vals), replace=False)] = vals


def _encode(blocks, layout):
    """float32 blocks [..., d_qk] (NaN rows = unused) -> (uint8 records [..., W], σ or None)."""
    live = _live(blocks)
    rows = blocks[live]
    width = RECORD_BYTES.get(layout, blocks.shape[-1])
    out = np.full(blocks.shape[:-1] + (width,), NAN_BYTE, dtype=np.uint8)
    scales = None
    if layout == "fp8":
        out[live] = quantize_fp8(rows)
    elif layout == "fp8_rope_aware":
        out[live], sigma = quantize_fp8_rope_aware(rows)
        scales = np.full(blocks.shape[:-1], np.nan, dtype=np.float32)
        scales[live] = sigma
    else:
        out[live] = quantize_fp8_ds_mla(rows)
    return out, scales


def _finish_q(rng, q, layout, np_dtype, q_fp8):
    """float32 q [T, H, d] -> (q as the layout wants it, q_scale or None)."""
    if layout == "fp8_rope_aware":
        return quantize_q_rope_aware(q)
    if layout == "fp8" and q_fp8:
        amax = np.abs(q.astype(np.float64)).max(axis=(1, 2), initial=0.0)
        amax = np.where(amax > 0, amax, 448.0)
        # a random factor in [1, 2): q's largest entry lands in (224, 448], the scale is no power of two
        q_scale = (amax / 448.0 * rng.uniform(1.0, 2.0, size=q.shape[0])).astype(np.float32)
        return quantize_fp8(q / q_scale.astype(np.float64)[:, None, None]), q_scale
    return q.astype(np_dtype), None


# ------------------------------------------------------------------ case builders


def make_case(rng: np.random.Generator, *, seq_lens, cache_lens, num_heads=16, page_size=64,
              d_qk=576, dtype=None, mask="causal", window=-1, sink=None, num_layers=1,
              layer_idx=0, num_partitions=None, spare_blocks=3, value_scale=1.0,
              layout="bf16", q_fp8=False, extreme=False) -> Case:
    """Build a dense case; ``sink`` is None, an [H] array, or 'random'.

    ``layout``: "bf16" (default; ``dtype`` "bfloat16" (default) or "float16" decides,
    as before), "fp16", or an fp8 layout: "fp8" (rows of ``d_qk`` e4m3 bytes; q bf16,
    or e4m3 bytes with a random per-token ``q_scale`` when ``q_fp8``),
    "fp8_rope_aware" (640-byte rows, σ in ``scales``, 640-byte q and its ``q_scale``)
    or "fp8_ds_mla" (656-byte rows, bf16 q).  ``value_scale`` multiplies the rows
    before quantising; ``extreme`` adds ±448·σ and e4m3-subnormal values to some rows.
    """
    layout, np_dtype = _resolve_layout(layout, dtype, d_qk, q_fp8, extreme)
    seq_lens = np.asarray(seq_lens, dtype=np.int64)
    cache_lens = np.asarray(cache_lens, dtype=np.int64)
    batch = len(seq_lens)
    offsets = np.concatenate([[0], np.cumsum(seq_lens)]).astype(np.uint32)
    num_keys = cache_lens + seq_lens
    pages = [math.ceil(n / page_size) for n in num_keys]
    max_pages = max(pages, default=0) + 1       # one spare column: a sentinel
    num_blocks = sum(pages) + spare_blocks
    perm = rng.permutation(num_blocks)
    lookup = np.full((batch, max_pages), SENTINEL_PAGE, dtype=np.uint32)
    blocks = np.full((num_blocks, num_layers, page_size, d_qk), np.nan, dtype=np.float32)
    nxt = 0
    for b in range(batch):
        lo, hi = visible_key_range(int(cache_lens[b]), int(seq_lens[b]), mask, window)
        for p in range(pages[b]):
            if (p + 1) * page_size <= lo or p * page_size >= hi:
                continue    # a page no visible key uses: sentinel id, never read
            blk = perm[nxt]
            nxt += 1
            lookup[b, p] = blk
            for slot in range(page_size):
                j = p * page_size + slot
                if lo <= j < hi:
                    blocks[blk, :, slot, :] = rng.standard_normal((num_layers, d_qk)) * value_scale
    q = rng.standard_normal((int(offsets[-1]), num_heads, d_qk)).astype(np.float32)
    if isinstance(sink, str) and sink == "random":
        sink = rng.normal(0.0, 2.0, size=num_heads).astype(np.float32)
    # Draws for fp8 come last, so a seed gives the same rows and q in every layout.
    scales = None
    if layout in FP8_LAYOUTS:
        if extreme:
            _add_extremes(rng, blocks, layout)
        blocks, scales = _encode(blocks, layout)
    else:
        blocks = blocks.astype(np_dtype)
    q, q_scale = _finish_q(rng, q, layout, np_dtype, q_fp8)
    return Case(q=q, input_row_offsets=offsets, blocks=blocks,
                lookup_table=lookup, cache_lengths=cache_lens.astype(np.uint32),
                page_size=page_size, layer_idx=layer_idx, scale=d_qk ** -0.5, mask=mask,
                window=window, attn_sink=None if sink is None else np.asarray(sink, np.float32),
                num_partitions=num_partitions, layout=layout, scales=scales, q_scale=q_scale,
                extreme=extreme)


GARBAGE_INDICES = (-1, -2**31, 2**31 - 1)


def make_sparse_case(rng: np.random.Generator, *, seq_lens, cache_lens, indices_stride,
                     num_heads=16, page_size=64, d_qk=576, dtype=None, mask="causal",
                     sink=None, num_layers=1, layer_idx=0, num_partitions=None, fold=False,
                     topk="none", logical=False, extra_stride=0, extra_page_size=32,
                     extra_topk="none", valid_fraction=0.8, live_rows=None,
                     layout="bf16", q_fp8=False, value_scale=1.0, extreme=False) -> Case:
    """A sparse case: indices point at random live rows of a NaN-filled cache;
    the rest are -1 or garbage (-2^31, 2^31-1, num_blocks*page_size, huge).

    ``layout``, ``q_fp8``, ``value_scale`` and ``extreme`` as in :func:`make_case`;
    the extra stream has the same layout (its σ in ``extra_scales``).
    """
    layout, np_dtype = _resolve_layout(layout, dtype, d_qk, q_fp8, extreme)
    seq_lens = np.asarray(seq_lens, dtype=np.int64)
    cache_lens = np.asarray(cache_lens, dtype=np.int64)
    batch, tokens = len(seq_lens), int(seq_lens.sum())
    offsets = np.concatenate([[0], np.cumsum(seq_lens)]).astype(np.uint32)

    def stream(stride, pg, nblocks):
        """NaN cache + [T, stride] indices into a random subset of its rows."""
        total = nblocks * pg
        n_live = max(1, min(total, live_rows or max(8, 2 * stride)))
        live = rng.choice(total, size=n_live, replace=False)
        blocks = np.full((nblocks, num_layers, pg, d_qk), np.nan, dtype=np.float32)
        for r in live:
            blocks[r // pg, :, r % pg, :] = rng.standard_normal((num_layers, d_qk)) * value_scale
        idx = rng.choice(live, size=(tokens, stride))          # duplicates happen
        garbage = np.array(list(GARBAGE_INDICES) + [total, total + 12345], dtype=np.int64)
        bad = rng.random((tokens, stride)) > valid_fraction
        idx = np.where(bad, rng.choice(garbage, size=(tokens, stride)), idx)
        return blocks, idx.astype(np.int32)

    def lengths(kind, stride):
        if kind == "none":
            return None
        return rng.integers(-2, stride + 4, size=batch).astype(np.int32)

    num_blocks = max(2, (indices_stride * 2) // page_size + 2)
    blocks, d_indices = stream(indices_stride, page_size, num_blocks)
    logical_indices = None
    if logical:
        n_max = int((cache_lens + seq_lens).max(initial=1))
        logical_indices = rng.integers(-1, n_max + 2, size=d_indices.shape).astype(np.int32)
    extra_blocks = extra_d = None
    if extra_stride:
        extra_blocks, extra_d = stream(extra_stride, extra_page_size,
                                       max(2, (extra_stride * 2) // extra_page_size + 2))
    q = rng.standard_normal((tokens, num_heads, d_qk)).astype(np.float32)
    if isinstance(sink, str) and sink == "random":
        sink = rng.normal(0.0, 2.0, size=num_heads).astype(np.float32)
    scales = extra_scales = None
    if layout in FP8_LAYOUTS:
        if extreme:
            _add_extremes(rng, blocks, layout)
            if extra_blocks is not None:
                _add_extremes(rng, extra_blocks, layout)
        blocks, scales = _encode(blocks, layout)
        if extra_blocks is not None:
            extra_blocks, extra_scales = _encode(extra_blocks, layout)
    else:
        blocks = blocks.astype(np_dtype)
        extra_blocks = None if extra_blocks is None else extra_blocks.astype(np_dtype)
    q, q_scale = _finish_q(rng, q, layout, np_dtype, q_fp8)
    return Case(q=q, input_row_offsets=offsets, blocks=blocks,
                lookup_table=np.full((batch, 1), SENTINEL_PAGE, dtype=np.uint32),
                cache_lengths=cache_lens.astype(np.uint32), page_size=page_size,
                layer_idx=layer_idx, scale=d_qk ** -0.5, mask=mask, window=-1,
                attn_sink=None if sink is None else np.asarray(sink, np.float32),
                num_partitions=num_partitions,
                sparse=dict(d_indices=d_indices, topk_lengths=lengths(topk, indices_stride),
                            logical_indices=logical_indices, extra_d_indices=extra_d,
                            extra_topk_lengths=lengths(extra_topk, extra_stride) if extra_stride else None,
                            fold_shared_index=fold),
                extra_blocks=extra_blocks, extra_page_size=extra_page_size,
                layout=layout, scales=scales, extra_scales=extra_scales, q_scale=q_scale,
                extreme=extreme)


def reference(case: Case):
    from .reference import mla_decode_reference
    return mla_decode_reference(
        case.q, case.input_row_offsets, case.collection(), case.layer_idx, case.scale,
        mask_str=case.mask, local_window_size=case.window, attn_sink_ptr=case.attn_sink,
        **case.sparse_kwargs(), **case.fp8_kwargs())


def run_gpu(case: Case, *, return_lse=True, num_partitions=None, out=None):
    """Upload a case, run the kernel, return host (out float32, lse)."""
    import cupy
    from .dispatch import mla_decode

    p = num_partitions if num_partitions is not None else case.num_partitions
    out_dev, lse_dev = mla_decode(
        cupy.asarray(case.q), case.collection(cupy), cupy.asarray(case.input_row_offsets),
        layer_idx=case.layer_idx, scale=case.scale, mask=case.mask,
        window=case.window if case.mask == "sliding_window_causal" else None,
        attn_sink=None if case.attn_sink is None else cupy.asarray(case.attn_sink),
        num_partitions=p, return_lse=True, out=out, q_max_seq_len=case.q_max_seq_len,
        **case.sparse_kwargs(cupy), **case.fp8_kwargs(cupy))
    return out_dev.get().astype(np.float32), lse_dev.get()


@dataclasses.dataclass
class Comparison:
    ok: bool
    max_err: float
    tol_at_worst: float
    worst_index: tuple
    lse_max_err: float
    message: str


def tolerance(dtype) -> tuple[float, float]:
    """(atol relative to max|V|, rtol): P rounded to 16 bits before P.V and the
    16-bit output rounding each contribute half an ulp of the format
    (bf16 2^-8, fp16 2^-11 relative); we allow 4 of them."""
    ulp = 2.0**-8 if np.dtype(dtype) == np.dtype(ml_dtypes.bfloat16) else 2.0**-11
    return 2 * ulp, 2 * ulp


def tolerance_for(case: Case) -> tuple[float, float]:
    """(atol relative to max|V|, rtol) for a case, by its layout.

    bf16 / fp16: :func:`tolerance` of q's dtype, as before.  fp8 layouts: the kernel
    computes in fp16 on K/V dequantised exactly (fp8, fp8_rope_aware: e4m3 and bf16
    values of fp16's range are exact in fp16) or rounded to fp16 after the group
    scale (fp8_ds_mla), and writes bf16: bf16's bound, 2·2^-8 each, dominates.
    The reference decodes the same bytes, so quantisation error is not in it.
    Use with ``compare(..., tol=tolerance_for(case), v_scale=v_max(case))``.
    """
    if case.kv_layout in FP8_LAYOUTS:
        return tolerance(ml_dtypes.bfloat16)
    return tolerance(case.q.dtype)


def v_max(case: Case) -> float:
    """max|V| over the live cache rows (main and extra stream), as decoded: the
    ``v_scale`` to pass to :func:`compare` with :func:`tolerance_for`; 0 when no row is live."""
    top = 0.0
    for blocks, scales in ((case.blocks, case.scales), (case.extra_blocks, case.extra_scales)):
        if blocks is None:
            continue
        live = _live(blocks)
        if not live.any():
            continue
        if case.kv_layout in FP8_LAYOUTS:
            _, v = dequantize(blocks[live], case.kv_layout, None if scales is None else scales[live])
        else:
            v = np.asarray(blocks[live][:, :D_V], dtype=np.float64)
        top = max(top, float(np.abs(v).max()))
    return top


def compare(out, lse, ref_out, ref_lse, *, dtype=None, v_scale=1.0, tol=None) -> Comparison:
    """NaN/inf positions first, then |out - ref| <= atol*v_scale + rtol*|ref|.

    ``(atol, rtol)`` is ``tol`` when given (e.g. :func:`tolerance_for`), else
    :func:`tolerance` of ``dtype``.
    """
    if tol is None and dtype is None:
        raise ValueError("compare: give dtype (for tolerance(dtype)) or tol=(atol, rtol)")
    out = np.asarray(out, np.float64)
    ref_out = np.asarray(ref_out, np.float64)
    for name, a, r in (("out", out, ref_out), ("lse", np.asarray(lse, np.float64), ref_lse)):
        bad = np.isnan(a) != np.isnan(r)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            return Comparison(False, math.inf, 0.0, idx, math.inf,
                              f"{name}: NaN mismatch at {idx}: got {a[idx]}, expected {r[idx]}")
        infs = np.isinf(a) | np.isinf(r)
        bad = infs & (a != r)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            return Comparison(False, math.inf, 0.0, idx, math.inf,
                              f"{name}: inf mismatch at {idx}: got {a[idx]}, expected {r[idx]}")
    atol, rtol = tolerance(dtype) if tol is None else (float(tol[0]), float(tol[1]))
    tol = atol * v_scale + rtol * np.abs(ref_out)
    err = np.abs(out - ref_out)
    excess = err - tol
    worst = tuple(int(i) for i in np.unravel_index(np.argmax(excess), excess.shape)) if err.size else ()
    finite = np.isfinite(ref_lse)
    lse_err = float(np.max(np.abs(np.asarray(lse)[finite] - ref_lse[finite]), initial=0.0))
    ok = bool(err.size == 0 or excess[worst] <= 0) and lse_err <= 1e-3 * max(1.0, float(np.max(np.abs(ref_lse[finite]), initial=1.0)))
    max_err = float(err.max(initial=0.0))
    msg = (f"max|out-ref|={max_err:.3e} (worst {worst}: got {out[worst] if err.size else 0:.5f}, "
           f"ref {ref_out[worst] if err.size else 0:.5f}, tol {tol[worst] if err.size else 0:.3e}); "
           f"max|lse-ref|={lse_err:.3e}")
    return Comparison(ok, max_err, float(tol[worst]) if err.size else 0.0, worst, lse_err, msg)


def check_against_reference(case: Case, **run_kw):
    """Run a case on the GPU, compare with the reference (NaN/inf positions first,
    then the tolerance of tolerance_for), assert, and return
    ``(out, lse, ref_out, ref_lse)``; ``run_kw`` go to :func:`run_gpu`."""
    out, lse = run_gpu(case, **run_kw)
    ref_out, ref_lse = reference(case)
    v_scale = v_max(case) if case.kv_layout in FP8_LAYOUTS else 1.0
    cmp = compare(out, lse, ref_out, ref_lse, tol=tolerance_for(case), v_scale=v_scale)
    assert cmp.ok, f"{case.describe()}: {cmp.message}"
    return out, lse, ref_out, ref_lse


def to_torch(a: np.ndarray):
    """A host array as a CUDA tensor (bf16 bits kept; uint32 index arrays as int32)."""
    import torch
    if a.dtype == np.dtype(ml_dtypes.bfloat16):
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda()
    if a.dtype == np.uint32:
        return torch.from_numpy(a.astype(np.int32)).cuda()
    return torch.from_numpy(a).cuda()
