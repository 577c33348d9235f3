"""Context-parallel sharding of a paged latent cache by position (NumPy only).

A :class:`Sharding` says which rank of ``world_size`` holds the key at global
position ``g`` of a sequence and where it sits in that rank's own cache:

* ``layout="interleave"`` (vLLM's decode context parallelism, DCP): blocks of
  ``interleave_size`` consecutive positions go round robin over the ranks,
  ``owner(g) = (g // I) % R`` and
  ``local(g) = (g // (I*R)) * I + g % I``.
  This is vLLM's ``cp_kv_cache_interleave_size`` layout (``vllm/config/parallel.py``;
  the slot mapping of ``vllm/v1/worker/block_table.py`` with the block table
  shared by the ranks and ``block_size % I == 0``; ``get_dcp_local_seq_lens``
  in ``vllm/v1/attention/backends/utils.py`` is :meth:`Sharding.local_count`).
* ``layout="contiguous"``: rank r holds the range ``[r*L, (r+1)*L)``, the last
  rank everything from ``(R-1)*L`` on (``L = chunk_size``).

Local positions are dense: rank r's keys of a sequence are its local positions
``0 .. local_count(N_b) - 1``, in increasing global order, paged through the
rank's own lookup table.  The same formulas exist once more, in CUDA, in
``kernels/distributed/mla_cp.cu.j2`` (the device side of
:mod:`mla_cupy.distributed`); the CPU tests hold the two to brute force and to
each other through the reference.

Also here: the host versions of what each rank does before its local decode
(local cache lengths, the local sliding window, sparse position translation),
and :func:`shard_cache_host`, which cuts a single-GPU cache into per-rank
caches.  They are what the CPU tests check against ``reference.py``.
"""
from __future__ import annotations

import dataclasses

import numpy as np

LAYOUTS = ("interleave", "contiguous")


def _check_int(name, v, lo):
    if isinstance(v, bool) or not isinstance(v, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {type(v).__name__}")
    if v < lo:
        raise ValueError(f"{name}: expected an int >= {lo}, got {v}")


@dataclasses.dataclass(frozen=True)
class Sharding:
    """Which positions rank ``rank`` of ``world_size`` holds (module docstring)."""

    world_size: int
    rank: int
    layout: str = "interleave"
    interleave_size: int = 1          # I, layout "interleave"
    chunk_size: int | None = None     # L, layout "contiguous"

    def __post_init__(self):
        _check_int("world_size", self.world_size, 1)
        _check_int("rank", self.rank, 0)
        if self.rank >= self.world_size:
            raise ValueError(f"rank: expected an int in [0, {self.world_size - 1}] "
                             f"(world_size {self.world_size}), got {self.rank}")
        if not isinstance(self.layout, str) or self.layout not in LAYOUTS:
            raise ValueError(f"layout: expected one of {LAYOUTS}, got {self.layout!r}")
        _check_int("interleave_size", self.interleave_size, 1)
        if self.layout == "contiguous":
            if self.chunk_size is None:
                raise ValueError("chunk_size: layout 'contiguous' needs the positions per rank, got None")
            _check_int("chunk_size", self.chunk_size, 1)
            if self.interleave_size != 1:
                raise ValueError(f"interleave_size: only layout 'interleave' takes one, "
                                 f"got {self.interleave_size} with layout 'contiguous'")
        elif self.chunk_size is not None:
            raise ValueError(f"chunk_size: only layout 'contiguous' takes one, got {self.chunk_size} "
                             f"with layout 'interleave'")

    # ---- the mapping (NumPy, vectorised; int64) ----

    @property
    def contiguous(self) -> bool:
        return self.layout == "contiguous"

    def for_rank(self, rank: int) -> "Sharding":
        return dataclasses.replace(self, rank=rank)

    def owner(self, g):
        """Rank holding global position(s) ``g``."""
        g = np.asarray(g, dtype=np.int64)
        if self.contiguous:
            return np.minimum(g // self.chunk_size, self.world_size - 1)
        return (g // self.interleave_size) % self.world_size

    def local_position(self, g):
        """Position of global ``g`` in its owner's cache."""
        g = np.asarray(g, dtype=np.int64)
        if self.contiguous:
            return g - self.owner(g) * self.chunk_size
        i, r = self.interleave_size, self.world_size
        return (g // (i * r)) * i + g % i

    def global_position(self, local):
        """Global position of this rank's local position(s) ``local``."""
        local = np.asarray(local, dtype=np.int64)
        if self.contiguous:
            return self.rank * self.chunk_size + local
        i, r = self.interleave_size, self.world_size
        return (local // i) * (i * r) + self.rank * i + local % i

    def local_count(self, n):
        """How many of the global positions ``[0, n)`` this rank holds."""
        n = np.asarray(n, dtype=np.int64)
        if self.contiguous:
            start = self.rank * self.chunk_size
            held = np.maximum(n - start, 0)
            return held if self.rank == self.world_size - 1 else np.minimum(held, self.chunk_size)
        i, r = self.interleave_size, self.world_size
        return (n // (i * r)) * i + np.clip(n % (i * r) - self.rank * i, 0, i)

    def max_local_count(self, n: int) -> int:
        """The most keys any rank holds of a sequence of ``n`` keys (a host bound)."""
        return max(int(self.for_rank(r).local_count(n)) for r in range(self.world_size))

    # ---- what a rank runs ----

    def local_window(self, window: int) -> int:
        """The local sliding window of a global one, where the dense kernels can
        express it exactly; ValueError otherwise (docs/spec.md §13)."""
        _check_int("window", window, 1)
        if self.world_size == 1:
            return window
        period = self.interleave_size * self.world_size
        if self.contiguous or window % period:
            why = ("a rank's window would start at a different local offset per sequence"
                   if self.contiguous else
                   f"only a multiple of world_size * interleave_size = {period} holds the same "
                   f"number of every rank's keys wherever it ends")
            raise ValueError(f"window: context-parallel 'sliding_window_causal' needs layout "
                             f"'interleave' and a window that is a multiple of {period}; {why}; "
                             f"got window={window} with layout {self.layout!r}")
        return window // self.world_size


def local_dense_lengths(sharding: Sharding, cache_lengths, seq_lens):
    """(local cache lengths ``C_b^r``, empty flags) of a dense shard: with
    ``S_b <= 1`` new tokens, rank r's local sequence has ``n = local_count(C_b + S_b)``
    keys, so ``C_b^r = n - S_b``; a sequence whose one token sees none of this
    rank's keys (``n < S_b``) is *empty* there (its partial LSE is -inf)."""
    s = np.asarray(seq_lens, dtype=np.int64)
    n = sharding.local_count(np.asarray(cache_lengths, dtype=np.int64) + s)
    return np.maximum(n - s, 0), n < s


def positions_to_rows(sharding: Sharding, positions, input_row_offsets, cache_lengths,
                      lookup_table, page_size: int, num_blocks: int):
    """Sparse top-k global token positions ``[T, k]`` -> this rank's encoded rows
    ``block * page_size + slot`` of ``d_indices`` (docs/spec.md §5), -1 where the
    slot is not this rank's: a position outside ``[0, N_b)``, held by another
    rank, on a page past the table's width or a block id past ``num_blocks``.
    ``Sharding(1, 0)`` gives the single-GPU rows of the same positions."""
    pos = np.asarray(positions, dtype=np.int64)
    offs = np.asarray(input_row_offsets, dtype=np.int64)
    table = np.asarray(lookup_table).astype(np.int64)
    seq_of_row = np.searchsorted(offs, np.arange(pos.shape[0]), side="right") - 1
    n_keys = np.asarray(cache_lengths, dtype=np.int64)[seq_of_row] + np.diff(offs)[seq_of_row]
    ok = (pos >= 0) & (pos < n_keys[:, None]) & (sharding.owner(pos) == sharding.rank)
    local = np.where(ok, sharding.local_position(np.where(ok, pos, 0)), 0)
    page = local // page_size
    ok &= page < table.shape[1]
    block = np.where(ok, table[seq_of_row[:, None], np.where(ok, page, 0)], -1)
    row = block * page_size + local % page_size
    ok &= (block >= 0) & (row < num_blocks * page_size) & (row <= np.iinfo(np.int32).max)
    return np.where(ok, row, -1).astype(np.int32)


def _unused_fill(dtype):
    return np.uint8(0xFF) if np.dtype(dtype) == np.uint8 else np.nan   # NaN in every format


def shard_cache_host(kv, input_row_offsets, sharding: Sharding, *, sentinel=2**31 - 1):
    """One rank's cache cut from a single-GPU ``PagedKVCollection`` of NumPy
    arrays: the rank's keys of every sequence at their local positions
    (:meth:`Sharding.local_position`), in fresh blocks, with NaN (0xff bytes for
    fp8 records, NaN scales) in the slots it does not use and ``sentinel`` in
    table entries of pages it has none of.  ``cache_lengths`` stay global: the
    distributed entry points take the global ``C_b``.  Slots whose global page
    is not in the source table (a sentinel there) are copied as unused."""
    from .cache import PagedKVCollection

    blocks = np.asarray(kv.blocks)
    table = np.asarray(kv.lookup_table).astype(np.int64)
    offs = np.asarray(input_row_offsets, dtype=np.int64)
    n_keys = np.asarray(kv.cache_lengths, dtype=np.int64)[:len(offs) - 1] + np.diff(offs)
    ps = kv.page_size
    counts = [int(sharding.local_count(n)) for n in n_keys]
    pages = [-(-c // ps) for c in counts]
    max_pages = max(pages, default=0) + 1
    local_blocks = np.full((max(sum(pages), 1),) + blocks.shape[1:], _unused_fill(blocks.dtype),
                           dtype=blocks.dtype)
    scales = None if kv.scales is None else np.asarray(kv.scales)
    local_scales = None if scales is None else np.full(local_blocks.shape[:3], np.nan, np.float32)
    local_table = np.full((table.shape[0], max_pages), sentinel, dtype=np.asarray(kv.lookup_table).dtype)
    nxt = 0
    for b, count in enumerate(counts):
        local_table[b, :pages[b]] = np.arange(nxt, nxt + pages[b])
        nxt += pages[b]
        if count == 0:
            continue
        loc = np.arange(count)
        g = sharding.global_position(loc)
        src_page = g // ps
        src_block = np.where(src_page < table.shape[1], table[b, np.minimum(src_page, table.shape[1] - 1)], -1)
        have = (src_block >= 0) & (src_block < blocks.shape[0])
        dst_block = local_table[b, loc // ps].astype(np.int64)
        local_blocks[dst_block[have], :, loc[have] % ps] = blocks[src_block[have], :, g[have] % ps]
        if scales is not None:
            local_scales[dst_block[have], :, loc[have] % ps] = scales[src_block[have], :, g[have] % ps]
    return PagedKVCollection(local_blocks, local_table, np.asarray(kv.cache_lengths), ps,
                             scales=local_scales, layout=kv.layout, max_cache_length=kv.max_cache_length)
