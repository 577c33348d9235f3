"""PagedKVCollection: the paged latent KV cache of docs/spec.md §2 (no CuPy import)."""
from __future__ import annotations

from . import records
from .arrays import dtype_name, to_host_int
from .records import Layout

_INDEX_DTYPES = ("int32", "uint32")
_D_QK: dict = {}   # (layout, dtype name, row width) -> D_qk


class PagedKVCollection:
    """One paged latent cache: ``blocks[lookup_table[b, j // page_size], layer, j % page_size]``
    is logical key j of sequence b.

    ``blocks`` may be ``[num_blocks, page_size, row]`` (one layer),
    ``[num_blocks, num_layers, page_size, row]`` or MAX's 6-D
    ``[num_blocks, 1, num_layers, page_size, 1, row]``; it is kept as the 4-D
    view.  Arrays may be CuPy, torch or (for the reference) NumPy.
    ``max_cache_length`` is a host bound on every cache length, used to choose
    ``num_partitions``; when None it is read from the device once, here.
    """

    def __init__(self, blocks, lookup_table, cache_lengths, page_size, *, scales=None,
                 layout=None, max_cache_length=None):
        self.blocks = _as_4d(blocks)
        if isinstance(page_size, bool) or not isinstance(page_size, int):
            raise TypeError(f"page_size: expected an int, got {type(page_size).__name__}")
        if page_size < 1 or page_size != self.blocks.shape[2]:
            raise ValueError(f"page_size: expected an int >= 1 equal to blocks' page axis "
                             f"({self.blocks.shape[2]}), got {page_size}")
        self.page_size = page_size
        _check_index_array("lookup_table", lookup_table, 2)
        _check_index_array("cache_lengths", cache_lengths, 1)
        if cache_lengths.shape[0] != lookup_table.shape[0]:
            raise ValueError(f"cache_lengths: expected shape [{lookup_table.shape[0]}] "
                             f"(one per lookup_table row), got {list(cache_lengths.shape)}")
        self.lookup_table = lookup_table
        self.cache_lengths = cache_lengths
        self.layout = _resolve_layout(self.blocks, layout)
        self.scales = check_scales(scales, self.blocks, self.layout)
        if max_cache_length is None:
            lengths = to_host_int(cache_lengths)
            max_cache_length = int(lengths.max()) if lengths.size else 0
        if isinstance(max_cache_length, bool) or not isinstance(max_cache_length, int):
            raise TypeError(f"max_cache_length: expected an int, got {type(max_cache_length).__name__}")
        if max_cache_length < 0:
            raise ValueError(f"max_cache_length: expected an int >= 0, got {max_cache_length!r}")
        self.max_cache_length = max_cache_length

    @property
    def num_blocks(self) -> int:
        return self.blocks.shape[0]

    @property
    def num_layers(self) -> int:
        return self.blocks.shape[1]

    @property
    def batch_size(self) -> int:
        return self.lookup_table.shape[0]

    @property
    def d_qk(self) -> int:
        """Q.K width of this cache: 576 (latent + rope) or 512 (no rope)."""
        key = (self.layout, dtype_name(self.blocks), self.blocks.shape[3])
        d = _D_QK.get(key)
        if d is None:   # read on every mla_decode call without a scale: memoised
            layout, dt, width = key
            d = _D_QK[key] = next(d for d in records.D_QK_CHOICES[layout]
                                  if records.row_width(layout, d, dt) == width)
        return d

    def __repr__(self):
        return (f"PagedKVCollection(layout={self.layout.value!r}, blocks={list(self.blocks.shape)}, "
                f"page_size={self.page_size}, batch_size={self.batch_size}, "
                f"max_cache_length={self.max_cache_length})")


def _require_array(name, x):
    if x is None or not hasattr(x, "shape") or not hasattr(x, "dtype"):
        raise TypeError(f"{name}: expected an array (CuPy, torch or NumPy), got {type(x).__name__}")


def _as_4d(blocks):
    _require_array("blocks", blocks)
    shape = tuple(blocks.shape)
    if len(shape) == 3:
        return blocks.reshape(shape[0], 1, shape[1], shape[2])
    if len(shape) == 4:
        return blocks
    if len(shape) == 6 and shape[1] == 1 and shape[4] == 1:
        return blocks.reshape(shape[0], shape[2], shape[3], shape[5])
    raise ValueError("blocks: expected [num_blocks, page_size, row], [num_blocks, num_layers, "
                     "page_size, row] or [num_blocks, 1, num_layers, page_size, 1, row], "
                     f"got shape {list(shape)}")


def _check_index_array(name, x, ndim):
    _require_array(name, x)
    if dtype_name(x) not in _INDEX_DTYPES:
        raise TypeError(f"{name}: expected int32 or uint32, got {dtype_name(x)}")
    if len(x.shape) != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {list(x.shape)}")


def _resolve_layout(blocks, layout) -> Layout:
    dt, row = dtype_name(blocks), blocks.shape[3]
    inferred = records.INFER_LAYOUT.get((dt, row))
    if layout is None:
        if inferred is None and all(dt not in records.cache_dtypes(x) for x in Layout):
            raise TypeError(f"blocks: expected dtype bfloat16, float16 or uint8 (fp8 bytes), got {dt}")
        if inferred is None:
            known = ", ".join(f"{d} rows of {w} ({x.value})" for (d, w), x in records.INFER_LAYOUT.items())
            raise ValueError(f"blocks: cannot infer a layout from dtype {dt} and row width {row}; "
                             f"expected one of: {known}")
        return inferred
    try:
        layout = Layout(layout)
    except ValueError:
        raise ValueError(f"layout: expected one of {[x.value for x in Layout]}, got {layout!r}") from None
    wanted = records.cache_dtypes(layout)
    if dt not in wanted:
        raise TypeError(f"blocks: layout {layout.value!r} expects dtype {wanted[0]}, got {dt}")
    widths = sorted(records.row_width(layout, d, dt) for d in records.D_QK_CHOICES[layout])
    if row not in widths:
        raise ValueError(f"blocks: layout {layout.value!r} expects rows of {widths} elements, got {row}")
    return layout


def check_scales(scales, blocks, layout, name="scales"):
    """Per-token sigma of a rope-aware cache (``[num_blocks, num_layers,
    page_size]`` float32, or 2-D for one layer): checked, returned 3-D."""
    if layout is Layout.FP8_ROPE_AWARE:
        if scales is None:   # an extra stream may take them from extra_scales_ptr
            return None
        _require_array(name, scales)
        want = tuple(blocks.shape[:3])
        shape = tuple(scales.shape)
        if len(shape) == 2 and blocks.shape[1] == 1:   # one-layer cache given 2-D scales
            scales, shape = scales.reshape(shape[0], 1, shape[1]), (shape[0], 1, shape[1])
        if shape != want:
            raise ValueError(f"{name}: expected shape {list(want)}, got {list(scales.shape)}")
        if dtype_name(scales) != "float32":
            raise TypeError(f"{name}: expected float32, got {dtype_name(scales)}")
        return scales
    if scales is not None:
        raise ValueError(f"{name}: only layout 'fp8_rope_aware' takes per-token scales; "
                         f"this cache is {layout.value!r}")
    return None
