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

    def describe(self) -> str:
        s = np.diff(self.input_row_offsets).tolist()
        return (f"B={self.batch_size} H={self.num_heads} d_qk={self.q.shape[2]} "
                f"dtype={self.q.dtype} page={self.page_size} mask={self.mask} W={self.window} "
                f"S={s} C={self.cache_lengths.tolist()} sink={self.attn_sink is not None} "
                f"P={self.num_partitions} layer={self.layer_idx}/{self.blocks.shape[1]}")


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


def reference(case: Case):
    from .reference import mla_decode_reference
    return mla_decode_reference(
        case.q, case.input_row_offsets, case.collection(), case.layer_idx, case.scale,
        mask_str=case.mask, local_window_size=case.window, attn_sink_ptr=case.attn_sink)


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
        num_partitions=p, return_lse=True, out=out, q_max_seq_len=case.q_max_seq_len)
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
