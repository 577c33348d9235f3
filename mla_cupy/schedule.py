"""How the work is cut: tile rows per CTA and ``num_partitions`` (pure Python).

The decode kernel runs one CTA per (row tile, split, sequence).  Row tiles
hold heads x query tokens of one sequence; splits cut the keys.  Too few CTAs
leave SMs idle; too many splits cost partial writes and a combine pass.
"""
from __future__ import annotations

import math
from typing import Mapping, NamedTuple

from .variants import TILE_ROWS

H200_SMS = 132
# Shared memory of one H200 SM (cudaDevAttrMaxSharedMemoryPerMultiprocessor);
# the driver keeps 1 KiB of it per resident CTA, so one block may opt in to
# 227 KiB.
H200_SMEM_PER_SM = 233472
RESERVED_SMEM_PER_CTA = 1024
# ctas_per_sm of each tile of the decode kernels on an H200 (render.launch_config:
# 64 and 32 rows take 150-190 KiB, 16 rows 84-101 KiB); tests recompute it.
H200_RESIDENT_CTAS = {64: 1, 32: 1, 16: 2}
KEYS_PER_TILE = 32        # BLOCK_N of the decode kernels (render.launch_config)
# Relative costs in units of one CTA's pass over one key tile (~1.5 us on an
# H200 for a 64-row tile): prologue + epilogue of a CTA, and the combine pass
# per partial row of 512 fp32 (write + read back of 2 KiB at ~3 TB/s, across
# the whole chip, expressed per CTA wave).
_CTA_FIXED_TILES = 2.0
_COMBINE_LAUNCH_TILES = 2.0
_COMBINE_BYTES_PER_TILE = 132 * 3.0e12 * 1.5e-6 / H200_SMS   # bytes the chip moves per tile-time
MAX_PARTITIONS = 64
# batch_invariant=True (docs/spec.md §10): every sequence's key axis is cut into
# splits of this many keys (rounded up to whole granules) whatever the batch,
# unless num_partitions is given; num_partitions is then the most splits any
# sequence of the batch can need (batch_invariant_partitions).  The length is
# chosen without knowing the batch: short splits keep a lone long sequence or a
# small batch spread over the SMs, long ones spare big batches the partials.
# H200, batch-invariant time / default time over issue 8's six cases
# (tools/results/NOTES.md): 4096 keys 1.04-3.53x (b8 h16: 16 CTAs), 2048
# 1.00-2.00x, 1024 1.00-1.37x; a fixed count of 16 splits, before, 1.0-2.2x.
BATCH_INVARIANT_SPLIT_KEYS = 1024


def key_axis_bound(q_max_seq_len: int, max_cache_length: int, *, sparse_mla: bool = False,
                   indices_stride: int = 0, extra_indices_stride: int = 0,
                   tokens_per_cta: int = 1, window: int | None = None) -> int:
    """The longest key axis a CTA of the batch can cut into splits (the
    kernels' split_keys): dense, every key of the longest sequence or its
    window (plus the window's alignment to a granule, which split_keys rounds
    down); sparse, the main slots plus the extra slots of the CTA's tokens."""
    if sparse_mla:
        return (min(indices_stride, max_cache_length + q_max_seq_len)
                + tokens_per_cta * extra_indices_stride)
    keys = max_cache_length + q_max_seq_len
    if window is not None:
        keys = min(keys, window + q_max_seq_len - 1)
    return keys


def batch_invariant_partitions(axis_keys: int, window: int | None = None) -> int:
    """Splits of BATCH_INVARIANT_SPLIT_KEYS keys that cover any sequence whose
    key axis is at most ``axis_keys`` long: a split holds at least that many
    keys (whole granules, rounded up), and a window's start is rounded down to
    a granule, which one more split covers for pages up to the split length."""
    # at least 2: every row then goes through the combine, alone or in any batch
    # (one split would finish the row in the decode kernel, with other rounding)
    return max(2, math.ceil(axis_keys / BATCH_INVARIANT_SPLIT_KEYS) + (window is not None))


# The pair schedule in the split model (choose_num_partitions): 64-slot tiles of
# ~2.25-2.7 us on an H200 against the 32-key unit's ~1.5, and partials measured at
# ~0.9-1.3 us a split at 512 rows against the model's 0.7 (NOTES.md session 23).
PAIR_KEYS_PER_TILE = 64
PAIR_TILE_COST = 1.8
PAIR_PARTIAL_COST = 1.4
# The pair schedule (mla_decode_pair.cu.j2) runs a CTA's jobs (virtual grid z = blockIdx.z,
# + gridDim.z, ...) from a table of this many in shared memory.
PAIR_MAX_JOBS = 32


def pair_grid_z(host_batch: int, clusters_per_z: int, sm_count: int = H200_SMS) -> int:
    """Grid z of a pair launch: enough z that the clusters (two CTAs, one an SM) of
    a z-slice, ``clusters_per_z`` = row-tile pairs x splits, fill the SMs once, so each
    cluster runs its later jobs without a new launch, set-up and pipeline fill (H200,
    b128 h128 top-2048, P=1: a second wave of CTAs costs 12 us more than 32 more tiles
    in the same CTA, tools/results/NOTES.md session 23); at least host_batch /
    PAIR_MAX_JOBS (a CTA's job table), at most host_batch (one job a CTA)."""
    for name, v in (("host_batch", host_batch), ("clusters_per_z", clusters_per_z), ("sm_count", sm_count)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 1:
            raise ValueError(f"{name}: expected an int >= 1, got {v!r}")
    fill = -(-(sm_count // 2) // clusters_per_z)
    return min(host_batch, max(fill, -(-host_batch // PAIR_MAX_JOBS)))


def tile_rows_for(rows_per_sequence: int) -> int:
    """Smallest tile that holds a sequence's rows (heads x tokens), else 64:
    16/32-row tiles skip the dead rows a 64-row tile would compute."""
    for rows in sorted(TILE_ROWS):
        if rows_per_sequence <= rows:
            return rows
    return max(TILE_ROWS)


def ctas_per_sm(smem_per_cta: int, smem_per_sm: int = H200_SMEM_PER_SM) -> int:
    """Resident CTAs per SM as shared memory allows (0: one CTA does not fit).

    Shared memory is what binds for the decode tiles: 128-256 threads of an
    SM's 2048, and registers (at most 255 per thread) allow two 128-thread or
    one 256-thread CTA, never fewer than shared memory does."""
    for name, v in (("smem_per_cta", smem_per_cta), ("smem_per_sm", smem_per_sm)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name}: expected an int >= 0, got {v!r}")
    return smem_per_sm // (smem_per_cta + RESERVED_SMEM_PER_CTA)


class RowTiling(NamedTuple):
    """How blockIdx.x covers the query rows r = i * H + h of a sequence.

    The rows fall into row groups of ``group_rows`` (a token's heads when each
    token has its own index row: sparse without fold; else all q_max_seq_len x H
    rows), each cut into ``group_tiles`` tiles of ``tile_rows``: CTA x computes
    rows ``g * group_rows + j * tile_rows ..`` of group g = x / group_tiles, tile
    j = x % group_tiles, clipped to its group and the sequence (the kernel's
    ``cta_rows``, which reads group_rows and group_tiles from its arguments)."""

    tile_rows: int
    group_rows: int
    group_tiles: int
    grid_x: int


def row_tiling(q_max_seq_len: int, num_heads: int, *, per_token: bool,
               tile_rows: int | None = None, batch_invariant: bool = False) -> RowTiling:
    """The row->CTA mapping, host side; ``tile_rows`` defaults to the smallest
    tile that holds a row group (``tile_rows_for``), or, with
    ``batch_invariant``, the smallest that holds one token's heads: a tile
    that does not depend on the batch's q_max_seq_len, so CTA x always holds
    rows ``x * tile_rows ..`` of its sequence (or token), whatever the batch."""
    group_rows = num_heads if per_token else q_max_seq_len * num_heads
    if tile_rows is None:
        tile_rows = tile_rows_for(num_heads if batch_invariant else group_rows)
    group_tiles = math.ceil(group_rows / tile_rows)
    return RowTiling(tile_rows, group_rows, group_tiles,
                     group_tiles * (q_max_seq_len if per_token else 1))



def choose_num_partitions(batch_size: int, num_heads: int, q_max_seq_len: int,
                          max_cache_length: int, *, sparse_mla: bool = False,
                          indices_stride: int = 0, extra_indices_stride: int = 0,
                          fold_shared_index: bool = False, window: int | None = None,
                          sm_count: int = H200_SMS,
                          resident_ctas: Mapping[int, int] = H200_RESIDENT_CTAS,
                          tile_rows: int | None = None, keys_per_tile: int = KEYS_PER_TILE,
                          tile_cost: float = 1.0, partial_cost: float = 1.0) -> int:
    """Number of key splits per sequence.

    ``sm_count`` and ``resident_ctas`` describe the device: the latter maps
    each tile's rows (16/32/64) to the CTAs of that tile one SM holds
    (:func:`ctas_per_sm` of the tile's shared memory; 0 where the tile does not
    fit, and then, as the dispatcher does, the next smaller tile runs).  The
    defaults are an H200's; ``mla_cupy.compiler.resident_ctas`` gives the
    current device's.  ``window`` is the sliding-window length (None: no
    window): a sequence's splits then cut only the ``window + q_max_seq_len -
    1`` keys its tokens can see.

    Model: CTAs = batch_size x row_tiles x P run in waves of
    sm_count x resident CTAs; each CTA costs (its key tiles + a fixed prologue
    and epilogue), so time ~ waves(P) x (ceil(keys / P / 32) + 2) plus, for
    P > 1, a combine pass that writes and reads P fp32 partial rows of 2 KiB
    per query row.  The P in 1..64 with the least modelled time wins (the
    smallest on ties); no split is left without a tile of keys.

    On a 132-SM H200 at 8K keys this gives, e.g., P=1 for 128 sequences x 128
    heads (256 CTAs of 64 rows nearly fill two waves), P=2 for 128 x 16 heads
    (128 CTAs of 16 rows, 264 slots), and up to 64 for one long sequence.  A
    partly filled last wave is worth splitting once the keys are long enough
    that the split's combine pass costs less than the idle SMs (e.g. 128 x 128
    at 1M keys gives 17).  An A100 holds one 16-row CTA per SM: 108 x 16 heads
    at 8K keys fill its 108 slots exactly (P=1) but only 108 of an H200's 264
    (P=7).
    The cache layout changes bytes per key, which moves every P alike; it
    enters only through ``resident_ctas``.  ``tile_rows`` fixes the tile (the
    Hopper family: 64 rows, whatever the row count); on the H200 that model
    picks the best of the P measured there (tools/results/NOTES.md): 1 for
    128 x 16 and 128 x 128 heads, 2 for 32 x 128, 16 for 8 x 16, 64 for one
    sequence of 128 heads.  ``keys_per_tile``, ``tile_cost`` (in units of the
    32-key tile above) and ``partial_cost`` (a factor on the combine's per-partial
    term) describe another kernel: the pair schedule's splits are whole 64-slot
    tiles, and its partials were measured at ~1.4 times the model's (PAIR_*; with
    them the model picks the best P measured on the H200 at b 1, 2, 4, 8, 16, 32
    and 128 x 128 heads top-2048, e.g. 8 at 2 x 2 tokens where the 32-key model took
    13: 26.5 against 28.7 us, NOTES.md session 23).
    """
    for name, v in (("batch_size", batch_size), ("num_heads", num_heads),
                    ("q_max_seq_len", q_max_seq_len), ("max_cache_length", max_cache_length),
                    ("sm_count", sm_count)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name}: expected an int >= 0, got {v!r}")
    if window is not None and (isinstance(window, bool) or not isinstance(window, int)
                               or window < 1):
        raise ValueError(f"window: expected None or an int >= 1, got {window!r}")
    if sparse_mla and window is not None:
        raise ValueError("window: sparse mode has no sliding window (index lists express it), "
                         f"expected None, got {window!r}")
    if sorted(resident_ctas) != sorted(TILE_ROWS) or any(
            isinstance(n, bool) or not isinstance(n, int) or n < 0 for n in resident_ctas.values()):
        raise ValueError(f"resident_ctas: expected {{tile rows: int >= 0}} for tiles {sorted(TILE_ROWS)}, "
                         f"got {dict(resident_ctas)!r}")
    _check_tile_model(keys_per_tile, tile_cost, partial_cost)
    if batch_size == 0 or q_max_seq_len == 0 or num_heads == 0:
        return 1
    tokens_per_tile = q_max_seq_len if (fold_shared_index or not sparse_mla) else 1
    rows = tokens_per_tile * num_heads
    # The Hopper family always runs 64-row tiles (tile_rows=64); the portable
    # one the smallest tile that holds a CTA's rows and fits the device.
    tile = tile_rows if tile_rows is not None else _fitting_tile(tile_rows_for(rows), resident_ctas)
    # Each token a CTA holds brings its own extra slots (the kernel's slot axis).
    tokens_per_cta = min(tokens_per_tile, math.ceil(tile / num_heads))
    keys = key_axis_bound(q_max_seq_len, max_cache_length, sparse_mla=sparse_mla,
                          indices_stride=indices_stride, extra_indices_stride=extra_indices_stride,
                          tokens_per_cta=tokens_per_cta, window=window)
    row_tiles = row_tiling(q_max_seq_len, num_heads, per_token=tokens_per_tile != q_max_seq_len,
                           tile_rows=tile).grid_x
    slots = max(1, sm_count) * resident_ctas[tile]
    base = batch_size * row_tiles
    key_tiles = max(1, math.ceil(keys / keys_per_tile))
    query_rows = batch_size * q_max_seq_len * num_heads

    def cost(p: int) -> float:
        waves = math.ceil(base * p / slots)
        t = waves * (math.ceil(key_tiles / p) * tile_cost + _CTA_FIXED_TILES)
        if p > 1:
            t += _COMBINE_LAUNCH_TILES + partial_cost * p * query_rows * 2 * 2048 / _COMBINE_BYTES_PER_TILE
        return t

    return min(range(1, min(MAX_PARTITIONS, key_tiles) + 1), key=lambda p: (cost(p), p))


def _check_tile_model(keys_per_tile, tile_cost, partial_cost) -> None:
    if isinstance(keys_per_tile, bool) or not isinstance(keys_per_tile, int) or keys_per_tile < 1:
        raise ValueError(f"keys_per_tile: expected an int >= 1, got {keys_per_tile!r}")
    for name, v in (("tile_cost", tile_cost), ("partial_cost", partial_cost)):
        if isinstance(v, bool) or not isinstance(v, (int, float)) or not math.isfinite(v) or v <= 0:
            raise ValueError(f"{name}: expected a finite number > 0, got {v!r}")


def _fitting_tile(tile_rows: int, resident_ctas: Mapping[int, int]) -> int:
    """The tile, or the next smaller one that fits an SM (as the dispatcher falls back)."""
    for rows in sorted((r for r in TILE_ROWS if r <= tile_rows), reverse=True):
        if resident_ctas[rows] > 0:
            return rows
    raise ValueError(f"resident_ctas: no tile of at most {tile_rows} rows fits the device, "
                     f"got {dict(resident_ctas)!r}")
