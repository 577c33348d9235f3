"""Hostile test cases and the comparison the GPU tests, the CLI ``check`` and
the benchmark share (NumPy only; ``upload`` imports CuPy).

A case is built on the host: random latent rows for every visible key, NaN in
every slot and page that no visible key uses, block tables permuted at random,
sentinel page ids (2**31 - 1) in table entries no visible key needs.
"""
from __future__ import annotations

import dataclasses
import math

import ml_dtypes
import numpy as np

from .cache import PagedKVCollection
from .variants import D_V

SENTINEL_PAGE = 2**31 - 1


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

    @property
    def batch_size(self) -> int:
        return len(self.input_row_offsets) - 1

    @property
    def num_heads(self) -> int:
        return self.q.shape[1]

    @property
    def q_max_seq_len(self) -> int:
        return int(np.diff(self.input_row_offsets).max()) if self.batch_size else 0

    def collection(self, xp=np) -> PagedKVCollection:
        return PagedKVCollection(xp.asarray(self.blocks), xp.asarray(self.lookup_table),
                                 xp.asarray(self.cache_lengths), self.page_size,
                                 max_cache_length=int(self.cache_lengths.max(initial=0)))

    def extra_collection(self, xp=np) -> PagedKVCollection | None:
        if self.extra_blocks is None:
            return None
        batch = self.batch_size
        return PagedKVCollection(xp.asarray(self.extra_blocks),
                                 xp.zeros((batch, 1), dtype=np.int32),
                                 xp.zeros(batch, dtype=np.int32), self.extra_page_size,
                                 max_cache_length=0)

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
        text = (f"B={self.batch_size} H={self.num_heads} d_qk={self.q.shape[2]} "
                f"dtype={self.q.dtype} page={self.page_size} mask={self.mask} W={self.window} "
                f"S={s} C={self.cache_lengths.tolist()} sink={self.attn_sink is not None} "
                f"P={self.num_partitions} layer={self.layer_idx}/{self.blocks.shape[1]}")
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


def make_case(rng: np.random.Generator, *, seq_lens, cache_lens, num_heads=16, page_size=64,
              d_qk=576, dtype="bfloat16", mask="causal", window=-1, sink=None, num_layers=1,
              layer_idx=0, num_partitions=None, spare_blocks=3, value_scale=1.0) -> Case:
    """Build a dense case; ``sink`` is None, an [H] array, or 'random'."""
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
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
    return Case(q=q.astype(np_dtype), input_row_offsets=offsets, blocks=blocks.astype(np_dtype),
                lookup_table=lookup, cache_lengths=cache_lens.astype(np.uint32),
                page_size=page_size, layer_idx=layer_idx, scale=d_qk ** -0.5, mask=mask,
                window=window, attn_sink=None if sink is None else np.asarray(sink, np.float32),
                num_partitions=num_partitions)


GARBAGE_INDICES = (-1, -2**31, 2**31 - 1)


def make_sparse_case(rng: np.random.Generator, *, seq_lens, cache_lens, indices_stride,
                     num_heads=16, page_size=64, d_qk=576, dtype="bfloat16", mask="causal",
                     sink=None, num_layers=1, layer_idx=0, num_partitions=None, fold=False,
                     topk="none", logical=False, extra_stride=0, extra_page_size=32,
                     extra_topk="none", valid_fraction=0.8, live_rows=None) -> Case:
    """A sparse case: indices point at random live rows of a NaN-filled cache;
    the rest are -1 or garbage (-2^31, 2^31-1, num_blocks*page_size, huge)."""
    np_dtype = ml_dtypes.bfloat16 if dtype == "bfloat16" else np.dtype(dtype)
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
            blocks[r // pg, :, r % pg, :] = rng.standard_normal((num_layers, d_qk))
        idx = rng.choice(live, size=(tokens, stride))          # duplicates happen
        garbage = np.array(list(GARBAGE_INDICES) + [total, total + 12345], dtype=np.int64)
        bad = rng.random((tokens, stride)) > valid_fraction
        idx = np.where(bad, rng.choice(garbage, size=(tokens, stride)), idx)
        return blocks.astype(np_dtype), idx.astype(np.int32)

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
    return Case(q=q.astype(np_dtype), input_row_offsets=offsets, blocks=blocks,
                lookup_table=np.full((batch, 1), SENTINEL_PAGE, dtype=np.uint32),
                cache_lengths=cache_lens.astype(np.uint32), page_size=page_size,
                layer_idx=layer_idx, scale=d_qk ** -0.5, mask=mask, window=-1,
                attn_sink=None if sink is None else np.asarray(sink, np.float32),
                num_partitions=num_partitions,
                sparse=dict(d_indices=d_indices, topk_lengths=lengths(topk, indices_stride),
                            logical_indices=logical_indices, extra_d_indices=extra_d,
                            extra_topk_lengths=lengths(extra_topk, extra_stride) if extra_stride else None,
                            fold_shared_index=fold),
                extra_blocks=extra_blocks, extra_page_size=extra_page_size)


def reference(case: Case):
    from .reference import mla_decode_reference
    return mla_decode_reference(
        case.q, case.input_row_offsets, case.collection(), case.layer_idx, case.scale,
        mask_str=case.mask, local_window_size=case.window, attn_sink_ptr=case.attn_sink,
        **case.sparse_kwargs())


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
        **case.sparse_kwargs(cupy))
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


def compare(out, lse, ref_out, ref_lse, *, dtype, v_scale=1.0) -> Comparison:
    """NaN/inf positions first, then |out - ref| <= atol*v_scale + rtol*|ref|."""
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
    atol, rtol = tolerance(dtype)
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
