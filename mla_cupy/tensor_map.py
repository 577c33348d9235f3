"""Tensor maps of a paged cache, for the Hopper kernels' TMA loaders.

The TMA kernels (kernels/hopper/: the seesaw and the narrow kernel, 64-key
tiles) load a dense 16-bit cache as 128-byte-swizzled boxes of ``{64 columns,
box_rows rows}``, one per column chunk and box of a tile, through a rank-4 map
over ``blocks`` viewed as ``[num_blocks, num_layers, page_size, D_qk]``
(innermost last).  A tile must lie in whole boxes of one page each, and each
box must land on a 1024-byte boundary for the swizzle (8 rows of 128 bytes):
:func:`box_rows` says which page sizes allow that, for the keys a kernel's box
may span (render.tma_box_keys: the seesaw's whole tile, one copy a chunk; a copy
costs its loading warp ~110-170 clocks of issue, H200, session 37).  The others
load with cp.async.

The map is encoded on the host by the driver's ``cuTensorMapEncodeTiled``
(mla_cupy.driver) and
passed to the kernel by value (abi.DECODE's ``kv_map``); encodings are
memoised by everything they depend on, the cache's address included.
"""
from __future__ import annotations

import ctypes
import threading

from . import driver

BASE_BOX_ROWS = 32      # box rows where a page holds whole 32-row runs (longer per kernel: render.TMA_BOX_KEYS)
BOX_COLUMNS = 64        # 16-bit elements per 128-byte swizzled row chunk
# Dense `fp8` rows (render.narrow_tma_raw): 128-byte swizzled column boxes, each row's piece
# on 32-byte sector boundaries (session 48: unswizzled 144-byte boxes, each straddling two
# sectors at both ends, cost the H200 7.5% on L2 sectors and requests), the last box of a
# 576-byte row half past the row (TMA fills zeros and reads nothing there); at least
# RAW_MIN_BOX_ROWS rows (a tile is then at most 4 row boxes)
RAW_BOX_BYTES = 128
RAW_MIN_BOX_ROWS = 16
MAP_BYTES = 128
NO_MAP = bytes(MAP_BYTES)

# cuda.h enumerators (CUDA 12 and 13 agree)
_DATA_TYPE = {"bf16": 9, "fp16": 6, "fp8": 0}   # CU_TENSOR_MAP_DATA_TYPE_BFLOAT16 / _FLOAT16 / _UINT8
_INTERLEAVE_NONE = 0
_SWIZZLE_128B = 3
_L2_PROMOTION_256B = 3
_OOB_FILL_ZEROS = 0                     # CU_TENSOR_MAP_FLOAT_OOB_FILL_NONE: zeros


def box_rows(page_size: int, box_keys: int = BASE_BOX_ROWS) -> int:
    """Rows per TMA box for a page size and the most keys a box of the kernel
    may span (``box_keys``, a multiple of 32 dividing its tile:
    render.tma_box_keys), or 0 when tiles cannot be loaded by TMA: a tile
    (aligned to its size) must be whole boxes of one page each, and a box must
    be a multiple of 8 rows (1024 bytes) to keep the 128-byte swizzle.  A page
    of whole ``box_keys`` runs gives boxes that long; else 32-row boxes where
    the page holds whole ones; else the page (8 or 16 rows)."""
    if page_size % box_keys == 0:
        return box_keys
    if page_size % BASE_BOX_ROWS == 0:
        return BASE_BOX_ROWS
    if page_size % 8 == 0 and BASE_BOX_ROWS % page_size == 0:
        return page_size
    return 0


def raw_box_rows(page_size: int, tile_keys: int) -> int:
    """Rows per TMA box of dense `fp8` rows (render.narrow_tma_raw: ``tile_keys`` is the
    narrow kernel's tile, render.tma_box_keys), or 0 when a tile cannot be whole boxes of one
    page each of at least RAW_MIN_BOX_ROWS rows (those pages run the ring)."""
    if page_size % tile_keys == 0:
        return tile_keys
    if tile_keys % page_size == 0 and page_size >= RAW_MIN_BOX_ROWS:
        return page_size
    return 0


def rows_for(dtype: str, page_size: int, box_keys: int = BASE_BOX_ROWS) -> int:
    """Rows per box of a cache of ``dtype`` (16-bit: box_rows; `fp8`: raw_box_rows, box_keys
    the tile)."""
    return raw_box_rows(page_size, box_keys) if dtype == "fp8" else box_rows(page_size, box_keys)


def _encode_function():
    u32p, u64p = ctypes.POINTER(ctypes.c_uint32), ctypes.POINTER(ctypes.c_uint64)
    return driver.bind("cuTensorMapEncodeTiled",
                       [ctypes.c_void_p, ctypes.c_int, ctypes.c_uint32, ctypes.c_void_p, u64p, u64p,
                        u32p, u32p, ctypes.c_int, ctypes.c_int, ctypes.c_int, ctypes.c_int])


def kv_map_arguments(address: int, dtype: str, num_blocks: int, num_layers: int, page_size: int,
                     d_qk: int, box_keys: int = BASE_BOX_ROWS) -> dict:
    """What :func:`encode_kv_map` passes to ``cuTensorMapEncodeTiled`` (innermost
    dimension first): a pure function, tested on the CPU."""
    if dtype not in _DATA_TYPE:
        raise ValueError(f"dtype: expected one of {sorted(_DATA_TYPE)}, got {dtype!r}")
    rows = rows_for(dtype, page_size, box_keys)
    if rows == 0:
        sizes = (f"a multiple of {box_keys}, or a divisor of it of at least {RAW_MIN_BOX_ROWS}"
                 if dtype == "fp8" else f"a multiple of {BASE_BOX_ROWS}, or 8 or 16")
        raise ValueError(f"page_size: expected a size TMA tiles can use ({sizes}), got {page_size}")
    if address % 16:
        raise ValueError(f"kv_collection.blocks: TMA needs a 16-byte aligned address, got {address:#x}")
    if dtype == "fp8" and d_qk % 16:
        raise ValueError(f"d_qk: `fp8` rows for TMA need a multiple of 16 bytes, got {d_qk}")
    # 128-byte swizzled boxes of a page's rows: 64 16-bit columns, or (e4m3 bytes,
    # render.narrow_tma_raw) 128 byte columns, a row's last box past its end where TMA fills zeros
    row_bytes = d_qk if dtype == "fp8" else 2 * d_qk
    return dict(
        data_type=_DATA_TYPE[dtype], rank=4, address=address,
        dims=(d_qk, page_size, num_layers, num_blocks),
        strides=(row_bytes, page_size * row_bytes, num_layers * page_size * row_bytes),
        box=(RAW_BOX_BYTES if dtype == "fp8" else BOX_COLUMNS, rows, 1, 1), element_strides=(1, 1, 1, 1),
        interleave=_INTERLEAVE_NONE, swizzle=_SWIZZLE_128B, l2_promotion=_L2_PROMOTION_256B,
        oob_fill=_OOB_FILL_ZEROS)


_lock = threading.Lock()
_encoded: dict = {}
ENCODED_MAX = 64


def encode_kv_map(address: int, dtype: str, num_blocks: int, num_layers: int, page_size: int,
                  d_qk: int, box_keys: int = BASE_BOX_ROWS) -> bytes:
    """The 128-byte CUtensorMap of a cache at ``address`` (memoised)."""
    key = (address, dtype, num_blocks, num_layers, page_size, d_qk, box_keys)
    with _lock:
        got = _encoded.get(key)
    if got is not None:
        return got
    a = kv_map_arguments(address, dtype, num_blocks, num_layers, page_size, d_qk, box_keys)
    out = (ctypes.c_uint64 * 16)()
    u32, u64 = ctypes.c_uint32, ctypes.c_uint64
    status = _encode_function()(
        ctypes.addressof(out), a["data_type"], a["rank"], ctypes.c_void_p(a["address"]),
        (u64 * 4)(*a["dims"]), (u64 * 3)(*a["strides"]), (u32 * 4)(*a["box"]),
        (u32 * 4)(*a["element_strides"]), a["interleave"], a["swizzle"], a["l2_promotion"],
        a["oob_fill"])
    driver.check("cuTensorMapEncodeTiled", status, f" for {a}")
    got = bytes(out)
    with _lock:
        while len(_encoded) >= ENCODED_MAX:
            _encoded.pop(next(iter(_encoded)), None)
        _encoded[key] = got
    return got


class KvMapSource:
    """A plan's rule for its decode kernel's (kv_box_rows, kv_map) from the
    cache's address: a plan re-derives them whenever a call brings another
    cache array (the memoised entry points), before launching anything.  A page
    size TMA cannot use gets no map: the kernel then loads with cp.async.
    ``required``: the kernel loads by TMA only (the seesaw), so such a page size
    is an error.  ``box_keys``: the keys a box of the kernel may span
    (render.tma_box_keys).
    (An address off 16 bytes never gets here: the plan refuses it,
    plan.check_aligned.)"""

    def __init__(self, dtype: str, num_blocks: int, num_layers: int, page_size: int, d_qk: int,
                 required: bool = False, box_keys: int = BASE_BOX_ROWS):
        self.args = (dtype, num_blocks, num_layers, page_size, d_qk, box_keys)
        self.rows = rows_for(dtype, page_size, box_keys)
        self.required = required
        if required and self.rows == 0:
            raise ValueError(f"page_size: the seesaw kernel (MLA_CUPY_HOPPER_SCHEDULE) loads by TMA "
                             f"and expects a multiple of {BASE_BOX_ROWS}, or 8 or 16, got {page_size}")

    def for_address(self, address: int) -> tuple[int, bytes]:
        if self.rows == 0:   # (required: the constructor refused the page size)
            return 0, NO_MAP
        return self.rows, encode_kv_map(address, *self.args)
