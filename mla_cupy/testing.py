"""Hostile test cases and the comparison the GPU tests, the CLI ``check`` and
the benchmark share (NumPy only; ``upload`` imports CuPy).

A case is built on the host: random latent rows for every visible key, NaN in
every slot and page that no visible key uses, block tables permuted at random,
sentinel page ids (2**31 - 1) in table entries no visible key needs.

fp8 layouts (``layout=`` of :func:`make_case` / :func:`make_sparse_case`): the same
float32 rows are drawn (same seed, same rows as the bf16 case) and quantised with
:mod:`mla_cupy.quantize`; unused slots hold 0xff bytes (NaN as e4m3, float32 and
bf16 alike) and, for fp8_rope_aware, NaN scales.

On the GPU (:func:`run_gpu`) every output and lse buffer starts as NaN
(:func:`nan_filled`), so a row the kernel never writes fails the comparison
instead of showing an earlier run's answer left in CuPy's memory pool.  A case
remembers the seed its generator started from (``Case.seed``, in
:meth:`Case.describe`), so a failure names what replays it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import math

import ml_dtypes
import numpy as np

from .cache import PagedKVCollection
from .quantize import (RECORD_BYTES, dequantize, quantize_fp8, quantize_fp8_ds_mla,
                       quantize_fp8_rope_aware, quantize_q_rope_aware)
from .records import NUM_GROUPS, SCALE_BYTES, scales_at
from .validate import output_dtype
from .variants import D_V, Layout

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
    seed: int | None = None                  # the seed the case's generator started from

    @property
    def kv_layout(self) -> str:
        """The cache layout: ``layout`` when set, else bf16 / fp16 from q's dtype."""
        if self.layout is not None:
            return self.layout
        return "fp16" if self.q.dtype == np.dtype(np.float16) else "bf16"

    @property
    def out_dtype(self) -> np.dtype:
        """The kernel's output dtype (bf16, or fp16 for the fp16 layout)."""
        return np.dtype(output_dtype(Layout(self.kv_layout)))

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
                f"P={self.num_partitions} layer={self.layer_idx}/{self.blocks.shape[1]} "
                f"scale={self.scale:.6g}")
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
        if self.seed is not None:
            text += f" rng_seed={self.seed}"
        return text


def visible_key_range(cache_len: int, seq_len: int, mask: str, window: int) -> tuple[int, int]:
    """Keys [lo, hi) that at least one query token of the sequence sees."""
    hi = cache_len + seq_len
    lo = max(0, cache_len - window + 1) if mask == "sliding_window_causal" else 0
    return (lo, hi) if seq_len > 0 else (0, 0)


def generator_seed(rng: np.random.Generator) -> int | None:
    """The seed ``rng`` started from (``np.random.default_rng(seed)`` replays it), or
    None when it cannot be told (a spawned or hand-built bit generator)."""
    seq = getattr(rng.bit_generator, "seed_seq", None)
    if isinstance(seq, np.random.SeedSequence) and not seq.spawn_key:
        return int(seq.entropy)
    return None


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
    """Slots holding a row: float rows starting with a finite value (unused ones hold
    NaN, or ±inf after :func:`poison_unread`), or fp8 records whose first byte is not NaN."""
    if blocks.dtype == np.uint8:
        return (blocks[..., 0] & 0x7F) != 0x7F
    return np.isfinite(np.asarray(blocks[..., 0], dtype=np.float32))


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


def _softmax_scale(scale, d_qk) -> float:
    return d_qk ** -0.5 if scale is None else float(scale)


# key_offsets: q holds 1 in the first rope column and a key offset / scale there, so every
# score of the key moves by its offset (natural log) and V (columns below 512) stays as drawn.
OFFSET_COLUMN = D_V


def _check_key_offsets(key_offsets, scale, d_qk) -> None:
    if key_offsets is not None and (d_qk <= OFFSET_COLUMN or _softmax_scale(scale, d_qk) == 0.0):
        raise ValueError(f"key_offsets: needs rope columns (d_qk 576) and a non-zero scale, "
                         f"got d_qk={d_qk}, scale={scale}")


def make_case(rng: np.random.Generator, *, seq_lens, cache_lens, num_heads=16, page_size=64,
              d_qk=576, dtype=None, mask="causal", window=-1, sink=None, num_layers=1,
              layer_idx=0, num_partitions=None, spare_blocks=3, value_scale=1.0,
              layout="bf16", q_fp8=False, extreme=False, scale=None, key_offsets=None) -> Case:
    """Build a dense case; ``sink`` is None, an [H] array, or 'random'.

    ``layout``: "bf16" (default; ``dtype`` "bfloat16" (default) or "float16" decides,
    as before), "fp16", or an fp8 layout: "fp8" (rows of ``d_qk`` e4m3 bytes; q bf16,
    or e4m3 bytes with a random per-token ``q_scale`` when ``q_fp8``),
    "fp8_rope_aware" (640-byte rows, σ in ``scales``, 640-byte q and its ``q_scale``)
    or "fp8_ds_mla" (656-byte rows, bf16 q).  ``value_scale`` multiplies the rows
    before quantising; ``extreme`` adds ±448·σ and e4m3-subnormal values to some rows.
    ``scale``: the softmax scale, ``d_qk ** -0.5`` when None.
    ``key_offsets``: None, or a function of a key's position giving a shift of its
    scores (natural-log units) for every query row (``OFFSET_COLUMN``).
    """
    layout, np_dtype = _resolve_layout(layout, dtype, d_qk, q_fp8, extreme)
    _check_key_offsets(key_offsets, scale, d_qk)
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
                    if key_offsets is not None:
                        blocks[blk, :, slot, OFFSET_COLUMN] = key_offsets(j) / _softmax_scale(scale, d_qk)
    q = rng.standard_normal((int(offsets[-1]), num_heads, d_qk)).astype(np.float32)
    if key_offsets is not None:
        q[..., OFFSET_COLUMN] = 1.0
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
                page_size=page_size, layer_idx=layer_idx, scale=_softmax_scale(scale, d_qk), mask=mask,
                window=window, attn_sink=None if sink is None else np.asarray(sink, np.float32),
                num_partitions=num_partitions, layout=layout, scales=scales, q_scale=q_scale,
                extreme=extreme, seed=generator_seed(rng))


GARBAGE_INDICES = (-1, -2**31, 2**31 - 1)


def make_sparse_case(rng: np.random.Generator, *, seq_lens, cache_lens, indices_stride,
                     num_heads=16, page_size=64, d_qk=576, dtype=None, mask="causal",
                     sink=None, num_layers=1, layer_idx=0, num_partitions=None, fold=False,
                     topk="none", logical=False, extra_stride=0, extra_page_size=32,
                     extra_topk="none", valid_fraction=0.8, live_rows=None,
                     layout="bf16", q_fp8=False, value_scale=1.0, extreme=False,
                     scale=None, key_offsets=None) -> Case:
    """A sparse case: indices point at random live rows of a NaN-filled cache;
    the rest are -1 or garbage (-2^31, 2^31-1, num_blocks*page_size, huge).

    ``layout``, ``q_fp8``, ``value_scale``, ``extreme`` and ``scale`` as in :func:`make_case`;
    the extra stream has the same layout (its σ in ``extra_scales``).  ``key_offsets``
    as in :func:`make_case`, of a row's number in its stream's cache (page * page_size + slot).
    """
    layout, np_dtype = _resolve_layout(layout, dtype, d_qk, q_fp8, extreme)
    _check_key_offsets(key_offsets, scale, d_qk)
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
            if key_offsets is not None:
                blocks[r // pg, :, r % pg, OFFSET_COLUMN] = key_offsets(r) / _softmax_scale(scale, d_qk)
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
    if key_offsets is not None:
        q[..., OFFSET_COLUMN] = 1.0
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
                layer_idx=layer_idx, scale=_softmax_scale(scale, d_qk), mask=mask, window=-1,
                attn_sink=None if sink is None else np.asarray(sink, np.float32),
                num_partitions=num_partitions,
                sparse=dict(d_indices=d_indices, topk_lengths=lengths(topk, indices_stride),
                            logical_indices=logical_indices, extra_d_indices=extra_d,
                            extra_topk_lengths=lengths(extra_topk, extra_stride) if extra_stride else None,
                            fold_shared_index=fold),
                extra_blocks=extra_blocks, extra_page_size=extra_page_size,
                layout=layout, scales=scales, extra_scales=extra_scales, q_scale=q_scale,
                extreme=extreme, seed=generator_seed(rng))


# two_level_ds_mla_case: e4m3 bytes of 1.0 and 2.0, the step of its scores (log2 units, under
# the running max's slack of 8, docs/spec.md section 3) and its tiles
E4M3_ONE, E4M3_TWO = 0x38, 0x40
TWO_LEVEL_STEP = 7.9
TWO_LEVEL_TILE = 64


def two_level_ds_mla_case(rng: np.random.Generator, group_scale: float) -> Case:
    """The worst case of the 16-row narrow kernel's fp16 P x scale (docs/spec.md section 4):
    an fp8_ds_mla case whose scores step up by TWO_LEVEL_STEP (log2 units) on every odd
    64-key tile.  Each live key's record holds one latent value, e4m3 1.0 (even tiles)
    or 2.0 (odd tiles) in column 0, every group scale ``group_scale``, nothing else; q is
    1.0 in column 0 (two sequences of one token, 512 and 1024 keys).  The running max
    stays on the first tile's (the step is under section 3's slack of 8), so every odd
    tile's weights are 2^7.9 ~ 239 and P x scale reaches 239 x group_scale."""
    seq_lens, cache_lens = [1, 1], [511, 1023]
    case = make_case(rng, seq_lens=seq_lens, cache_lens=cache_lens, num_heads=16, layout="fp8_ds_mla")
    at = scales_at("fp8_ds_mla")
    blocks = case.blocks.copy()
    for b, keys in enumerate(np.add(seq_lens, cache_lens)):
        for j in range(keys):
            row = blocks[case.lookup_table[b, j // case.page_size], case.layer_idx, j % case.page_size]
            row[:] = 0
            row[0] = E4M3_TWO if (j // TWO_LEVEL_TILE) % 2 else E4M3_ONE
            row[at:at + SCALE_BYTES * NUM_GROUPS] = np.full(NUM_GROUPS, group_scale, np.float32).view(np.uint8)
    q = np.zeros_like(case.q)
    q[..., 0] = 1.0
    # the scores' step in log2 units: scale * log2(e) * group_scale * (2 - 1)
    return dataclasses.replace(case, blocks=blocks, q=q, scale=TWO_LEVEL_STEP / (np.log2(np.e) * group_scale))


def sub_case(case: Case, b: int) -> Case:
    """Sequence ``b`` of a case as a batch of one: its rows of q and of the index
    arrays, its table row and lengths; the same cache blocks (and extra stream)."""
    lo, hi = int(case.input_row_offsets[b]), int(case.input_row_offsets[b + 1])
    sparse = None
    if case.sparse is not None:
        sparse = {k: (v[lo:hi] if k.endswith("indices") else v[b:b + 1]) if isinstance(v, np.ndarray)
                  else v for k, v in case.sparse.items()}
    return dataclasses.replace(
        case, q=case.q[lo:hi], input_row_offsets=np.array([0, hi - lo], dtype=case.input_row_offsets.dtype),
        lookup_table=case.lookup_table[b:b + 1], cache_lengths=case.cache_lengths[b:b + 1],
        q_scale=None if case.q_scale is None else case.q_scale[lo:hi], sparse=sparse)


def only_minus_one(case: Case) -> Case:
    """The case with every sparse entry the checked mode would refuse made
    legal in its strict sense (docs/spec.md §11, mla_cupy.checked): out-of-range
    indices become -1, lengths are clipped to [0, stride], logical positions
    outside [0, N_b) become -1.  The decode computes the same result."""
    if case.sparse is None:
        return case
    sp = dict(case.sparse)
    streams = [("d_indices", "topk_lengths", case.blocks.shape[0] * case.page_size)]
    if sp.get("extra_d_indices") is not None:
        streams.append(("extra_d_indices", "extra_topk_lengths",
                        case.extra_blocks.shape[0] * case.extra_page_size))
    for idx, lengths, total in streams:
        d = sp[idx].copy()
        d[(d < 0) | (d >= total)] = -1
        sp[idx] = d
        if sp.get(lengths) is not None:
            sp[lengths] = np.clip(sp[lengths], 0, d.shape[1]).astype(np.int32)
    if sp.get("logical_indices") is not None:
        lg = sp["logical_indices"].copy()
        offs = case.input_row_offsets.astype(np.int64)
        for b in range(case.batch_size):
            n = int(case.cache_lengths[b]) + int(offs[b + 1] - offs[b])
            rows = lg[offs[b]:offs[b + 1]]
            rows[(rows < 0) | (rows >= n)] = -1
        sp["logical_indices"] = lg
    return dataclasses.replace(case, sparse=sp)


def checked_mode_inputs(case: Case, *, device_batch=None, q_max_seq_len=None) -> dict:
    """Keyword arguments of :func:`mla_cupy.checked.find_violation` for a case as
    :func:`run_gpu` calls it (host batch = B, the case's q_max_seq_len unless given)."""
    sparse = None
    if case.sparse is not None:
        sp = case.sparse
        sparse = dict(d_indices=sp["d_indices"], topk_lengths=sp["topk_lengths"],
                      logical_indices=sp["logical_indices"] if case.mask != "null" else None,
                      fold=sp["fold_shared_index"],
                      main_rows_total=case.blocks.shape[0] * case.page_size,
                      extra_d_indices=sp["extra_d_indices"], extra_topk_lengths=sp["extra_topk_lengths"],
                      extra_rows_total=(0 if case.extra_blocks is None
                                        else case.extra_blocks.shape[0] * case.extra_page_size))
    return dict(input_row_offsets=case.input_row_offsets, num_tokens=case.q.shape[0],
                device_batch=case.batch_size if device_batch is None else device_batch,
                host_batch=case.batch_size,
                q_max_seq_len=case.q_max_seq_len if q_max_seq_len is None else q_max_seq_len,
                cache_lengths=case.cache_lengths, lookup_table=case.lookup_table,
                page_size=case.page_size, num_blocks=case.blocks.shape[0],
                window=case.window if case.mask == "sliding_window_causal" else None, sparse=sparse)


def checked_mode_facts(case: Case, *, q_max_seq_len=None):
    """The :class:`mla_cupy.checked.CallFacts` of a case (for messages)."""
    from .checked import CallFacts
    sp = case.sparse or {}
    extra = sp.get("extra_d_indices")
    return CallFacts(
        num_tokens=case.q.shape[0], host_batch=case.batch_size,
        q_max_seq_len=case.q_max_seq_len if q_max_seq_len is None else q_max_seq_len,
        capacity=case.lookup_table.shape[1] * case.page_size, num_blocks=case.blocks.shape[0],
        indices_stride=sp["d_indices"].shape[1] if sp else 0,
        main_rows_total=case.blocks.shape[0] * case.page_size,
        extra_stride=extra.shape[1] if extra is not None else 0,
        extra_rows_total=0 if extra is None else case.extra_blocks.shape[0] * case.extra_page_size,
        signed=frozenset(name for name, a in (
            ("input_row_offsets", case.input_row_offsets), ("kv_collection.cache_lengths", case.cache_lengths),
            ("kv_collection.lookup_table", case.lookup_table)) if a.dtype == np.int32))


# ------------------------------------------------------------------ masked means never read

POISON = (np.nan, np.inf, -np.inf)


def read_rows(case: Case) -> tuple[set, set]:
    """The (block, slot) rows of layer ``layer_idx`` the decode may read
    (docs/spec.md §11): dense, the keys some new token sees; sparse, the rows
    behind valid entries at slots in use that some token of the sequence sees
    (for ``fold``, through the first token's row), and the valid extra entries in
    use.  Returns (main rows, extra rows)."""
    offs = case.input_row_offsets.astype(np.int64)
    main, extra = set(), set()
    for b in range(case.batch_size):
        o0, o1 = int(offs[b]), int(offs[b + 1])
        c, seq_len = int(case.cache_lengths[b]), o1 - o0
        if case.sparse is None:
            lo, hi = visible_key_range(c, seq_len, case.mask, case.window)
            main.update((int(case.lookup_table[b, j // case.page_size]), j % case.page_size)
                        for j in range(lo, hi))
            continue
        sp = case.sparse
        d, lg = sp["d_indices"], sp["logical_indices"]
        k = d.shape[1] if sp["topk_lengths"] is None else min(d.shape[1], int(sp["topk_lengths"][b]))
        k = max(0, min(k, c + seq_len))
        total = case.blocks.shape[0] * case.page_size
        for i in range(seq_len):
            row = o0 if sp["fold_shared_index"] else o0 + i
            last = c + (seq_len - 1 if sp["fold_shared_index"] else i)   # the latest token that uses the row
            for s in range(k):
                e = int(d[row, s])
                pos = s if lg is None else int(lg[row, s])
                seen = case.mask == "null" or 0 <= pos <= last
                if 0 <= e < total and seen:
                    main.add((e // case.page_size, e % case.page_size))
            ed = sp["extra_d_indices"]
            if ed is None:
                continue
            ke = ed.shape[1] if sp["extra_topk_lengths"] is None else \
                min(ed.shape[1], int(sp["extra_topk_lengths"][b]))
            etotal = case.extra_blocks.shape[0] * case.extra_page_size
            for e in ed[o0 + i, :max(0, ke)].tolist():
                if 0 <= e < etotal:
                    extra.add((e // case.extra_page_size, e % case.extra_page_size))
    return main, extra


def _poison_rows(blocks, scales, layout, keep, layer_idx):
    """Copies of ``blocks`` (and ``scales``) where every row but ``keep`` (rows of
    layer ``layer_idx``) holds NaN, +inf or -inf (row by row, in turn) in each of
    its parts' own encoding: 16-bit values, e4m3 NaN bytes (e4m3 has no infinity),
    float32 group scales and σ, bf16 rope values."""
    from .records import is_byte_record, rope_at, scales_at
    blocks = blocks.copy()
    scales = None if scales is None else scales.copy()
    flat = blocks.reshape(-1, blocks.shape[-1])
    nb, nl, ps = blocks.shape[:3]
    kept = np.zeros((nb, nl, ps), dtype=bool)
    for blk, slot in keep:
        kept[blk, layer_idx, slot] = True
    rows = np.flatnonzero(~kept.reshape(-1))
    for n, r in enumerate(rows):
        value = POISON[n % len(POISON)]
        if not is_byte_record(Layout(layout)):
            flat[r] = value
            continue
        flat[r, :D_V] = 0xFF if n % 2 else 0x7F   # the two e4m3 NaNs
        if layout == "fp8":
            flat[r, D_V:] = 0x7F
            continue
        rope = np.full((flat.shape[1] - rope_at(layout)) // 2, value, dtype=ml_dtypes.bfloat16)
        flat[r, rope_at(layout):] = rope.view(np.uint8)
        at = scales_at(layout)
        if at is not None:
            flat[r, at:rope_at(layout)] = np.full((rope_at(layout) - at) // 4, value, np.float32).view(np.uint8)
        if scales is not None:
            scales.reshape(-1)[r] = value
    return blocks, scales


def poison_unread(case: Case) -> Case:
    """The case with NaN, +inf and -inf in every cache row (and σ) the decode must
    not read (:func:`read_rows`): masked and hidden slots, invalid indices, slots
    past topk_lengths, pages past cache_lengths, keys outside a sliding window,
    other layers.  The result must not change, bit for bit (masked means never read)."""
    main, extra = read_rows(case)
    layout = case.kv_layout
    blocks, scales = _poison_rows(case.blocks, case.scales, layout, main, case.layer_idx)
    extra_blocks, extra_scales = case.extra_blocks, case.extra_scales
    if extra_blocks is not None:
        extra_blocks, extra_scales = _poison_rows(extra_blocks, extra_scales, layout, extra, case.layer_idx)
    return dataclasses.replace(case, blocks=blocks, scales=scales, extra_blocks=extra_blocks,
                               extra_scales=extra_scales)


def reference(case: Case, dequantize_to=None):
    """The case's float64 ``(out, lse)``; ``dequantize_to="bfloat16"`` rounds
    fp8_ds_mla's dequantised values as the Hopper kernels do."""
    from .reference import mla_decode_reference
    return mla_decode_reference(
        case.q, case.input_row_offsets, case.collection(), case.layer_idx, case.scale,
        mask_str=case.mask, local_window_size=case.window, attn_sink_ptr=case.attn_sink,
        dequantize_to=dequantize_to, **case.sparse_kwargs(), **case.fp8_kwargs())


def dequantization_slack(ref_out, ref_lse, rounded_out, rounded_lse):
    """``compare``'s ``slack`` for fp8_ds_mla: the Hopper kernels round e4m3 * scale
    to bf16 before their MMAs (docs/spec.md §4), the portable ones do not.  A
    kernel's distance from the exact reference is then at most its distance from
    the rounded one (the ordinary tolerance) plus the distance between the two
    references, which is this slack: ``(|out difference| per element, max |lse
    difference|)``, measured on the case itself."""
    out = np.abs(np.asarray(ref_out, np.float64) - np.asarray(rounded_out, np.float64))
    finite = np.isfinite(ref_lse) & np.isfinite(rounded_lse)
    lse = float(np.max(np.abs(np.asarray(ref_lse)[finite] - np.asarray(rounded_lse)[finite]), initial=0.0))
    return np.nan_to_num(out, nan=0.0), lse


# ------------------------------------------------------------------ running and comparing


def nan_filled(shape, dtype, like=None):
    """A device array of ``shape`` holding NaN, for a kernel's ``out`` or ``lse``: an
    element the kernel never writes then fails the comparison instead of showing an
    earlier run's answer left in the memory pool.  ``dtype``: bfloat16, float16 or
    float32 (a NumPy / ml_dtypes dtype or its name).  A torch tensor on ``like``'s
    device when ``like`` is a torch tensor, else a CuPy array on the current device."""
    dt = np.dtype(dtype)
    if dt.name not in ("bfloat16", "float16", "float32"):
        raise ValueError(f"dtype: expected bfloat16, float16 or float32, got {dtype!r}")
    if like is not None and type(like).__module__.startswith("torch"):
        import torch
        return torch.full(tuple(shape), float("nan"), dtype=getattr(torch, dt.name), device=like.device)
    import cupy
    return fill_nan(cupy.empty(tuple(shape), dtype=dt))


def fill_nan(a):
    """Set every element of a CuPy array or torch tensor (bf16, fp16, fp32) to NaN in
    place, e.g. buffers a captured CUDA graph writes; returns ``a``."""
    if type(a).__module__.startswith("torch"):
        return a.fill_(float("nan"))
    # written as the NaN's bits: needs no float kernel for bf16
    bits = np.full((), np.nan, dtype=a.dtype).view(f"u{a.dtype.itemsize}")
    a.view(bits.dtype).fill(bits)
    return a


def nan_workspace(rows: int):
    """A split-KV workspace ``(o_part, lse_part)`` of ``rows`` partial rows, NaN-filled,
    in place of ``dispatch._owned_workspace`` (with ``_workspaces`` and ``_eager_plans``
    emptied so that every plan asks for one): a partial the decode did not write,
    or one the combine weighs wrongly, then shows in the output."""
    import cupy
    from .records import D_V
    return cupy.full(rows * D_V, np.nan, np.float32), cupy.full(rows, np.nan, np.float32)


def run_gpu(case: Case, *, return_lse=True, num_partitions=None, **decode_kwargs):
    """Upload a case and run :func:`mla_decode` into NaN-filled buffers: ``out``, and
    ``lse`` when ``return_lse`` (else the ``lse=None`` path, mla_decode's default).
    ``decode_kwargs`` (``backend``, ``batch_invariant``, ``validate``, ``stream``) go
    to mla_decode.  Returns host ``(out as float32, lse or None)``."""
    import cupy
    from .dispatch import mla_decode

    rows = (case.q.shape[0], case.num_heads)
    out = nan_filled((*rows, D_V), case.out_dtype)
    lse = nan_filled(rows, np.float32) if return_lse else None
    mla_decode(
        cupy.asarray(case.q), case.collection(cupy), cupy.asarray(case.input_row_offsets),
        layer_idx=case.layer_idx, scale=case.scale, mask=case.mask,
        window=case.window if case.mask == "sliding_window_causal" else None,
        attn_sink=None if case.attn_sink is None else cupy.asarray(case.attn_sink),
        num_partitions=num_partitions if num_partitions is not None else case.num_partitions,
        out=out, lse=lse, q_max_seq_len=case.q_max_seq_len,
        **case.sparse_kwargs(cupy), **case.fp8_kwargs(cupy), **decode_kwargs)
    return out.get().astype(np.float32), None if lse is None else lse.get()


@contextlib.contextmanager
def grid_for_sms(sms: int | None):
    """The dispatcher's grids built as for a device of ``sms`` SMs (None: this one's),
    eager plans dropped before and after: on two SMs the pair schedule's grid has one z
    (schedule.pair_grid_z), so a CTA runs every sequence's job in turn at any batch."""
    from . import dispatch
    if sms is None:
        yield
        return
    saved = dispatch.sm_count_of_current_device
    dispatch._eager_plans.clear()
    dispatch.sm_count_of_current_device = lambda: sms
    try:
        yield
    finally:
        dispatch.sm_count_of_current_device = saved
        dispatch._eager_plans.clear()


def assert_schedule_ran(plans, suffix: str, describe: str = "") -> bool:
    """The plans a test's calls built ran the kernels of the Hopper schedule whose
    variant names end in ``suffix`` (a schedule forced by MLA_CUPY_HOPPER_SCHEDULE,
    or the one auto picks; a variant's ``_evict_first``, ``_multicast`` or ``_segments`` twin counts as its
    schedule),
    or, where MLA_CUPY_BACKEND=portable forces the portable family, portable kernels
    only: a schedule never overrides the backend.  Returns whether the Hopper kernels ran."""
    from .variants import resolve_backend
    names = {plan.variant for plan in plans}
    assert names, f"no call was planned: {describe}"
    if resolve_backend() == "portable":
        assert not any("_hopper" in v for v in names), (names, describe)
        return False
    assert all(v.removesuffix("_segments").removesuffix("_multicast").removesuffix("_evict_first").endswith(suffix)
               for v in names), \
        (names, describe)
    return True


@dataclasses.dataclass(frozen=True)
class Tolerance:
    """How far a kernel's result may be from the reference (:func:`tolerance`)."""

    atol: float             # per element: |out - ref| <= atol + rtol * |ref|
    rtol: float
    rel_rms: float          # whole tensor: ||out - ref|| / ||ref|| <= rel_rms
    lse_rtol: float = 1e-3  # |lse - ref_lse| <= lse_rtol * max(1, max |ref_lse|)


def tolerance(out_dtype, data_scale: float) -> Tolerance:
    """The bounds for an output of ``out_dtype`` (bf16 or fp16) from data whose
    largest |V| is ``data_scale`` (:func:`v_max`), for every layout.

    With u the output format's unit roundoff (bf16 2^-8, fp16 2^-11): P is rounded
    to the 16-bit MMA type (bf16 for the bf16 layout, `fp8_ds_mla` and the Hopper
    ring's `fp8`, fp16 otherwise: never coarser than the output) before P.V, an error of at most u * sum_j p_j |V_j| <=
    u * data_scale per element, and the output is rounded once more, at most
    u * |ref|.  Per element we allow twice each.  Over the tensor the roundings are
    independent: their relative RMS error is about 0.6 u, at worst (a row of two
    keys rounded alike) about 1.4 u; we allow 2 u.  The reference decodes the same
    bytes, so no quantisation error of fp8 belongs in here.
    """
    u = 2.0**-11 if np.dtype(out_dtype) == np.dtype(np.float16) else 2.0**-8
    return Tolerance(atol=2 * u * float(data_scale), rtol=2 * u, rel_rms=2 * u)


def tolerance_for(case: Case) -> Tolerance:
    """:func:`tolerance` of the case's output dtype and its largest |V| (:func:`v_max`)."""
    return tolerance(case.out_dtype, v_max(case))


_V_MAX_CHUNK = 1024   # blocks per step: a million-key cache is never copied to float whole


def v_max(case: Case) -> float:
    """max|V| over the live cache rows (main and extra stream), as decoded; 0 when
    no row is live."""
    top = 0.0
    for blocks, scales in ((case.blocks, case.scales), (case.extra_blocks, case.extra_scales)):
        if blocks is None:
            continue
        for lo in range(0, blocks.shape[0], _V_MAX_CHUNK):
            chunk = blocks[lo:lo + _V_MAX_CHUNK]
            live = _live(chunk)
            if not live.any():
                continue
            if case.kv_layout in FP8_LAYOUTS:
                sigma = None if scales is None else scales[lo:lo + _V_MAX_CHUNK][live]
                _, v = dequantize(chunk[live], case.kv_layout, sigma)
            else:
                v = chunk[live][:, :D_V].astype(np.float32)
            top = max(top, float(np.abs(v).max()))
    return top


@dataclasses.dataclass
class Comparison:
    ok: bool
    max_err: float
    tol_at_worst: float
    worst_index: tuple
    lse_max_err: float
    rel_rms: float          # ||out - ref|| / ||ref|| over the finite elements
    message: str


def _mismatch(message, idx) -> Comparison:
    return Comparison(False, math.inf, 0.0, idx, math.inf, math.inf, message)


def compare(out, lse, ref_out, ref_lse, *, tol: Tolerance | None = None, dtype=None,
            v_scale=None, slack=None) -> Comparison:
    """NaN/inf positions first; then every element, the whole tensor and lse
    within a :class:`Tolerance`: ``tol`` (e.g. :func:`tolerance_for`), or
    ``tolerance(dtype, v_scale)`` (``v_scale`` 1 when omitted).  ``slack``
    (:func:`dequantization_slack`) widens the per-element, whole-tensor and lse
    bounds by a known, measured deviation."""
    if tol is None:
        if dtype is None:
            raise ValueError("compare: give tol (a Tolerance, e.g. tolerance_for(case)) or dtype")
        tol = tolerance(dtype, 1.0 if v_scale is None else v_scale)
    elif not isinstance(tol, Tolerance):
        raise TypeError(f"tol: expected a Tolerance (tolerance(), tolerance_for()), got {type(tol).__name__}")
    elif dtype is not None or v_scale is not None:
        raise ValueError("compare: tol already holds the bounds; drop dtype and v_scale")
    out = np.asarray(out, np.float64)
    ref_out = np.asarray(ref_out, np.float64)
    lse = np.asarray(lse, np.float64)
    for name, a, r in (("out", out, ref_out), ("lse", lse, ref_lse)):
        bad = np.isnan(a) != np.isnan(r)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            return _mismatch(f"{name}: NaN mismatch at {idx}: got {a[idx]}, expected {r[idx]}", idx)
        bad = (np.isinf(a) | np.isinf(r)) & (a != r)
        if bad.any():
            idx = tuple(int(i) for i in np.argwhere(bad)[0])
            return _mismatch(f"{name}: inf mismatch at {idx}: got {a[idx]}, expected {r[idx]}", idx)
    out_slack, lse_slack = (0.0, 0.0) if slack is None else slack
    bound = tol.atol + tol.rtol * np.abs(ref_out) + out_slack
    err = np.abs(out - ref_out)
    excess = err - bound
    worst = tuple(int(i) for i in np.unravel_index(np.argmax(excess), excess.shape)) if err.size else ()
    finite = np.isfinite(ref_out)
    err_norm = float(np.linalg.norm(err[finite]))
    ref_norm = float(np.linalg.norm(ref_out[finite]))
    rel_rms = err_norm / ref_norm if ref_norm > 0 else (0.0 if err_norm == 0 else math.inf)
    rms_bound = tol.rel_rms + (float(np.linalg.norm(np.broadcast_to(out_slack, err.shape)[finite])) / ref_norm
                               if slack is not None and ref_norm > 0 else 0.0)
    finite_lse = np.isfinite(ref_lse)
    lse_err = float(np.max(np.abs(lse[finite_lse] - ref_lse[finite_lse]), initial=0.0))
    lse_bound = tol.lse_rtol * max(1.0, float(np.max(np.abs(ref_lse[finite_lse]), initial=1.0))) + lse_slack
    ok = bool(err.size == 0 or excess[worst] <= 0) and rel_rms <= rms_bound and lse_err <= lse_bound
    max_err = float(err.max(initial=0.0))
    at = (lambda a: float(a[worst])) if err.size else (lambda a: 0.0)
    msg = (f"max|out-ref|={max_err:.3e} (worst {worst}: got {at(out):.5f}, ref {at(ref_out):.5f}, "
           f"tol {at(bound):.3e}); ||out-ref||/||ref||={rel_rms:.3e} (tol {rms_bound:.3e}); "
           f"max|lse-ref|={lse_err:.3e} (tol {lse_bound:.3e})")
    return Comparison(ok, max_err, at(bound), worst, lse_err, rel_rms, msg)


def check_case(case: Case, *, num_partitions=None, **decode_kwargs):
    """Run a case on the GPU twice, with lse and with ``lse=None`` (mla_decode's
    default; the kernels skip the lse stores), outputs NaN-filled before each launch.
    The first must match the reference within :func:`tolerance_for`; the second
    output must equal the first bit for bit (docs/spec.md §10).  ``decode_kwargs``
    as in :func:`run_gpu`.  Returns ``(Comparison, out, lse, ref_out, ref_lse)``;
    asserts nothing."""
    out, lse = run_gpu(case, num_partitions=num_partitions, **decode_kwargs)
    ref_out, ref_lse = reference(case)
    slack = (dequantization_slack(ref_out, ref_lse, *reference(case, "bfloat16"))
             if case.kv_layout == "fp8_ds_mla" else None)
    cmp = compare(out, lse, ref_out, ref_lse, tol=tolerance_for(case), slack=slack)
    out_without_lse, _ = run_gpu(case, return_lse=False, num_partitions=num_partitions, **decode_kwargs)
    differ = out.view(np.uint32) != out_without_lse.view(np.uint32)
    if differ.any():
        idx = tuple(int(i) for i in np.argwhere(differ)[0])
        cmp = dataclasses.replace(cmp, ok=False, message=(
            f"lse=None path: {int(differ.sum())} output elements differ from the lse path, first at "
            f"{idx}: {out_without_lse[idx]} vs {out[idx]}; lse path: {cmp.message}"))
    return cmp, out, lse, ref_out, ref_lse


def check_against_reference(case: Case, *, num_partitions=None):
    """:func:`check_case`, asserted with the case's description (its seed included);
    returns ``(out, lse, ref_out, ref_lse)``."""
    cmp, *arrays = check_case(case, num_partitions=num_partitions)
    assert cmp.ok, f"{case.describe()}: {cmp.message}"
    return tuple(arrays)


def to_torch(a: np.ndarray):
    """A host array as a CUDA tensor (bf16 bits kept; uint32 index arrays as int32)."""
    import torch
    if a.dtype == np.dtype(ml_dtypes.bfloat16):
        return torch.from_numpy(a.view(np.int16)).view(torch.bfloat16).cuda()
    if a.dtype == np.uint32:
        return torch.from_numpy(a.astype(np.int32)).cuda()
    return torch.from_numpy(a).cuda()


# ------------------------------------------------------------------ host-only stand-ins


class FakeCudaArray:
    """A stand-in for a CUDA array with no GPU behind it: metadata, the
    ``__cuda_array_interface__`` and a distinct address (of a small host
    buffer; nothing ever dereferences it).  ``device``: the id its ``device``
    reports (None: no ``device`` attribute, as some CUDA arrays have none);
    ``contiguous=False`` gives every other element of the last axis; the address
    lies ``offset`` bytes past a 16-byte boundary (0: aligned, as CuPy's and
    torch's allocations are).  For CPU tests of validation and planning and
    ``tools/host_cost.py --stub``."""

    def __init__(self, shape, dtype, device: int | None = 0, *, contiguous: bool = True, offset: int = 0):
        self.shape = tuple(int(s) for s in shape)
        if device is not None:
            self.device = _FakeDevice(device)
        self.dtype = np.dtype(ml_dtypes.bfloat16) if dtype == "bfloat16" else np.dtype(dtype)
        self._host = np.empty(48, np.uint8)           # owns the address
        address = (self._host.ctypes.data + 15) // 16 * 16 + offset
        strides, acc = [], self.dtype.itemsize
        for s in reversed(self.shape):
            strides.append(acc)
            acc *= max(s, 1)
        self.strides = tuple(reversed(strides))
        if not contiguous:
            self.strides = tuple(2 * s for s in self.strides)
        self.flags = _CONTIGUOUS if contiguous else _STRIDED
        self.__cuda_array_interface__ = {"shape": self.shape, "typestr": self.dtype.str,
                                         "data": (address, False),
                                         "strides": None if contiguous else self.strides, "version": 3}

    @property
    def ndim(self):
        return len(self.shape)

    @property
    def size(self):
        return math.prod(self.shape)

    @property
    def address(self) -> int:
        return self.__cuda_array_interface__["data"][0]

    def reshape(self, *shape):
        """A contiguous view: same address."""
        if len(shape) == 1 and isinstance(shape[0], (tuple, list)):
            shape = tuple(shape[0])
        if math.prod(shape) != self.size:
            raise ValueError(f"cannot reshape {list(self.shape)} to {list(shape)}")
        view = FakeCudaArray(shape, self.dtype, getattr(getattr(self, "device", None), "id", None))
        view._host = self._host
        view.__cuda_array_interface__["data"] = self.__cuda_array_interface__["data"]
        return view

    def __repr__(self):
        return f"FakeCudaArray({list(self.shape)}, {self.dtype}, 0x{self.address:x})"


class _FakeDevice:
    def __init__(self, device_id: int):
        self.id = device_id


class _Flags:
    def __init__(self, c_contiguous: bool):
        self.c_contiguous, self.f_contiguous = c_contiguous, False


_CONTIGUOUS, _STRIDED = _Flags(True), _Flags(False)


class _FakeKernel:
    """What a plan reads of a compiled ``cupy.RawKernel``: ``kernel.ptr``."""

    def __init__(self, name: str):
        self.name = name
        self.kernel = self
        self.ptr = 0x1000 + len(name)


@dataclasses.dataclass
class StubbedLaunch:
    """One launch the stub recorded: function, grid, block, shared memory,
    stream, the parameter slots' values at launch time, whether it was a
    programmatic dependent launch (cuLaunchKernelEx with PDL) and the
    kernel's variant name."""

    func_ptr: int
    grid: tuple
    block: tuple
    smem: int
    stream: int
    slots: tuple
    programmatic: bool = False
    kernel_name: str = ""


def fake_tensor_map_encode(out_address, data_type, rank, address, dims, strides, box, element_strides,
                           interleave, swizzle, l2_promotion, oob_fill) -> int:
    """cuTensorMapEncodeTiled's stand-in under :func:`stub_device`: the map's 16
    words are its arguments (address, data type, rank, 4 dims, 3 strides, 4 box
    sizes, swizzle, 0), so a test reads back what a kernel would be given."""
    import ctypes
    words = (ctypes.c_uint64 * 16).from_address(out_address)
    values = [address.value or 0, data_type, rank, *dims[:4], *strides[:3], *box[:4], swizzle, 0]
    for i, v in enumerate(values):
        words[i] = v
    return 0


def stub_device(*, record: bool = True, hopper: bool = True):
    """A context manager that lets the entry points and plans run on a machine
    without a GPU: device queries answer device 0 (an sm_90a with an H200's
    shared memory when ``hopper``), kernels are stand-ins, allocations are
    :class:`FakeCudaArray`, and ``cuLaunchKernel`` records what it would have
    launched (a list, yielded) -- or, ``record=False``, does nothing (the
    Python cost of a call without the launch itself: ``tools/host_cost.py``)."""
    import contextlib

    from . import compiler, dispatch, plan, scalar_args, tensor_map

    launches: list = []

    def no_launch(f, gx, gy, gz, bx, by, bz, smem, stream, params, extra):
        pass

    def no_launch_ex(config, f, params, extra):
        pass

    def recorded_launch(k, stream):
        launches.append(StubbedLaunch(k.func_ptr, k.grid, k.block, k.smem, stream, tuple(k.slots),
                                      k.programmatic, getattr(k.raw_kernel, "name", "")))

    def stream_handle(stream, q, device_id, _real=plan.stream_handle):
        return 0 if stream is None else _real(stream, q, device_id)

    def empty(q, shape, dtype_name, torch_io):
        return FakeCudaArray(shape, dtype_name)

    def workspace(rows):
        return FakeCudaArray((rows * D_V,), np.float32), FakeCudaArray((rows,), np.float32)

    patches = [(dispatch, "_device_id", lambda x: 0), (dispatch, "_stream_handle", stream_handle),
               (plan, "stream_handle", stream_handle), (plan, "current_device", lambda: 0),
               (plan, "_launch_kernel", no_launch), (plan, "_launch_kernel_ex", no_launch_ex),
               (plan, "allocate_device_bytes", lambda dev, n: FakeCudaArray((n,), np.uint8, dev)),
               (plan, "stream_capturing", lambda handle: False),
               (dispatch, "get_kernel", lambda key, dev: _FakeKernel(key.name)),
               (compiler, "device_arch", lambda dev: "sm_90a" if hopper else "sm_80"),
               (dispatch, "_smem_limit", lambda dev: 232448),
               (dispatch, "_on_device", lambda dev: contextlib.nullcontext()),
               (dispatch, "_owned_workspace", workspace), (dispatch, "_empty_like_io", empty),
               (scalar_args, "_upload", lambda host: FakeCudaArray(host.shape, host.dtype)),
               (tensor_map, "_encode_function", lambda: fake_tensor_map_encode),
               (tensor_map, "_encoded", {})]
    if record:
        patches.append((plan.KernelLaunch, "launch", recorded_launch))

    @contextlib.contextmanager
    def stubbed():
        saved = [(mod, name, getattr(mod, name)) for mod, name, _ in patches]
        caches = (dict(dispatch._eager_plans), dict(dispatch._workspaces),
                  dict(scalar_args._partitions), dict(scalar_args._shared))
        for memo in (dispatch._eager_plans, dispatch._workspaces, scalar_args._partitions,
                     scalar_args._shared):
            memo.clear()       # no plan of the real device leaks in, none of ours out
        try:
            for mod, name, value in patches:
                setattr(mod, name, value)
            yield launches
        finally:
            for mod, name, value in saved:
                setattr(mod, name, value)
            for memo, old in zip((dispatch._eager_plans, dispatch._workspaces, scalar_args._partitions,
                                  scalar_args._shared), caches):
                memo.clear()
                memo.update(old)
    return stubbed()
