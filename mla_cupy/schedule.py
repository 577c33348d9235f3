"""How the work is cut: tile rows per CTA and ``num_partitions`` (pure Python).

The decode kernel runs one CTA per (row tile, split, sequence).  Row tiles
hold heads x query tokens of one sequence; splits cut the keys.  Too few CTAs
leave SMs idle; too many splits cost partial writes and a combine pass.
"""
from __future__ import annotations

import math
from typing import NamedTuple

from .variants import TILE_ROWS

H200_SMS = 132
KEYS_PER_TILE = 32        # BLOCK_N of the decode kernels (render.launch_config)
# Relative costs in units of one CTA's pass over one key tile (~1.5 us on an
# H200 for a 64-row tile): prologue + epilogue of a CTA, and the combine pass
# per partial row of 512 fp32 (write + read back of 2 KiB at ~3 TB/s, across
# the whole chip, expressed per CTA wave).
_CTA_FIXED_TILES = 2.0
_COMBINE_LAUNCH_TILES = 2.0
_COMBINE_BYTES_PER_TILE = 132 * 3.0e12 * 1.5e-6 / H200_SMS   # bytes the chip moves per tile-time
MAX_PARTITIONS = 64


def tile_rows_for(rows_per_sequence: int) -> int:
    """Smallest tile that holds a sequence's rows (heads x tokens), else 64:
    16/32-row tiles skip the dead rows a 64-row tile would compute."""
    for rows in sorted(TILE_ROWS):
        if rows_per_sequence <= rows:
            return rows
    return max(TILE_ROWS)


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
               tile_rows: int | None = None) -> RowTiling:
    """The row->CTA mapping, host side; ``tile_rows`` defaults to the smallest
    tile that holds a row group (``tile_rows_for``)."""
    group_rows = num_heads if per_token else q_max_seq_len * num_heads
    if tile_rows is None:
        tile_rows = tile_rows_for(group_rows)
    group_tiles = math.ceil(group_rows / tile_rows)
    return RowTiling(tile_rows, group_rows, group_tiles,
                     group_tiles * (q_max_seq_len if per_token else 1))


def ctas_per_sm(tile_rows: int) -> int:
    """Resident CTAs per SM, from shared memory: 16-row tiles take ~95 KB
    (two fit in 227 KB), 32/64-row tiles 150-190 KB (one fits)."""
    return 2 if tile_rows == 16 else 1


def choose_num_partitions(batch_size: int, num_heads: int, q_max_seq_len: int,
                          max_cache_length: int, *, layout: str = "bf16",
                          sparse_mla: bool = False, indices_stride: int = 0,
                          extra_indices_stride: int = 0, fold_shared_index: bool = False,
                          sm_count: int = H200_SMS) -> int:
    """Number of key splits per sequence.

    Model: CTAs = batch_size x row_tiles x P run in waves of
    sm_count x ctas_per_sm; each CTA costs (its key tiles + a fixed prologue
    and epilogue), so time ~ waves(P) x (ceil(keys / P / 32) + 2) plus, for
    P > 1, a combine pass that writes and reads P fp32 partial rows of 2 KiB
    per query row.  The P in 1..64 with the least modelled time wins (the
    smallest on ties); no split is left without a tile of keys.

    On a 132-SM H200 at 8K keys this gives, e.g., P=1 for 128 sequences x 128
    heads (256 CTAs of 64 rows nearly fill two waves), P=2 for 128 x 16 heads
    (128 CTAs of 16 rows, 264 slots), and up to 64 for one long sequence.  A
    partly filled last wave is worth splitting once the keys are long enough
    that the split's combine pass costs less than the idle SMs (e.g. 128 x 128
    at 1M keys gives 17).  Other
    SM counts scale the slot count; the layout changes only bytes per key,
    which moves all P alike, so it does not enter.
    """
    del layout  # bytes per key scale every P alike (see docstring)
    for name, v in (("batch_size", batch_size), ("num_heads", num_heads),
                    ("q_max_seq_len", q_max_seq_len), ("max_cache_length", max_cache_length),
                    ("sm_count", sm_count)):
        if isinstance(v, bool) or not isinstance(v, int) or v < 0:
            raise ValueError(f"{name}: expected an int >= 0, got {v!r}")
    if batch_size == 0 or q_max_seq_len == 0 or num_heads == 0:
        return 1
    if sparse_mla:
        keys = min(indices_stride, max_cache_length + q_max_seq_len) + extra_indices_stride
        tokens_per_tile = q_max_seq_len if fold_shared_index else 1
    else:
        keys = max_cache_length + q_max_seq_len
        tokens_per_tile = q_max_seq_len
    rows = tokens_per_tile * num_heads
    tile = tile_rows_for(rows)
    row_tiles = row_tiling(q_max_seq_len, num_heads, per_token=tokens_per_tile != q_max_seq_len, tile_rows=tile).grid_x
    slots = max(1, sm_count) * ctas_per_sm(tile)
    base = batch_size * row_tiles
    key_tiles = max(1, math.ceil(keys / KEYS_PER_TILE))
    query_rows = batch_size * q_max_seq_len * num_heads

    def cost(p: int) -> float:
        waves = math.ceil(base * p / slots)
        t = waves * (math.ceil(key_tiles / p) + _CTA_FIXED_TILES)
        if p > 1:
            t += _COMBINE_LAUNCH_TILES + p * query_rows * 2 * 2048 / _COMBINE_BYTES_PER_TILE
        return t

    return min(range(1, min(MAX_PARTITIONS, key_tiles) + 1), key=lambda p: (cost(p), p))
