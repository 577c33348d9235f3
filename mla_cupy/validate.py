"""Argument checks: one ``check_*`` per kind of argument (no CuPy import).

Every failure is raised before anything is launched: TypeError for a wrong type
or dtype, ValueError for a wrong shape, value or combination.  Messages name the
argument, what was expected and what was given.
"""
from __future__ import annotations

import dataclasses
import math
import numbers
from typing import Any

import numpy as np

from .arrays import dtype_name, is_cupy, is_device_array
from .records import BYTE_DTYPES, D_V, Layout, output_dtype, q_dtypes, q_width
from .variants import Mask

MAX_HEADS = 128


def check_device_array(name, x, *, dtypes=None, ndim=None, shape=None):
    """A C-contiguous CUDA array; dtypes/ndim/shape are checked when given."""
    if x is None or not (is_device_array(x)):
        got = "None" if x is None else type(x).__name__
        raise TypeError(f"{name}: expected a CUDA array (CuPy array or torch CUDA tensor), got {got}")
    dt = dtype_name(x)
    if dtypes is not None and dt not in dtypes:
        raise TypeError(f"{name}: expected dtype {' or '.join(dtypes)}, got {dt}")
    if ndim is not None and len(x.shape) != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions, got shape {list(x.shape)}")
    if shape is not None and tuple(x.shape) != tuple(shape):
        raise ValueError(f"{name}: expected shape {list(shape)}, got {list(x.shape)}")
    if not _is_c_contiguous(x):
        raise ValueError(f"{name}: expected a C-contiguous array, got strides {_strides(x)}")


def _strides(x):
    s = x.stride() if callable(getattr(x, "stride", None)) else x.strides
    return list(s)


def _is_c_contiguous(x) -> bool:
    if is_cupy(x):
        return x._c_contiguous
    if callable(getattr(x, "is_contiguous", None)):
        return x.is_contiguous()
    flags = getattr(x, "flags", None)
    return bool(flags.c_contiguous) if flags is not None else True


def check_int(name, v, *, lo=None, hi=None):
    if isinstance(v, bool) or not isinstance(v, numbers.Integral):
        raise TypeError(f"{name}: expected an int, got {type(v).__name__}")
    if (lo is not None and v < lo) or (hi is not None and v > hi):
        rng = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name}: expected an int {rng}, got {v}")


def check_flag(name, v) -> bool:
    """A yes/no argument: bool (NumPy's too), or the ints 0 and 1."""
    if isinstance(v, (bool, np.bool_)) or (isinstance(v, numbers.Integral) and v in (0, 1)):
        return bool(v)
    raise TypeError(f"{name}: expected a bool, got {type(v).__name__} {v!r}"[:200])


def check_scale(scale):
    if isinstance(scale, bool) or not isinstance(scale, numbers.Real):
        raise TypeError(f"scale: expected a float, got {type(scale).__name__}")
    if not math.isfinite(scale):
        raise ValueError(f"scale: expected a finite float, got {scale}")


def check_mask(mask_str, local_window_size) -> Mask:
    if not isinstance(mask_str, str):
        raise TypeError(f"mask_str: expected one of {[m.value for m in Mask]}, got {type(mask_str).__name__}")
    try:
        mask = Mask(mask_str)
    except ValueError:
        raise ValueError(f"mask_str: expected one of {[m.value for m in Mask]}, got {mask_str!r}") from None
    if mask is Mask.SLIDING_WINDOW_CAUSAL:
        check_int("local_window_size", local_window_size, lo=1)
    elif local_window_size is not None and (isinstance(local_window_size, bool)
                                            or not isinstance(local_window_size, numbers.Integral)):
        raise TypeError(f"local_window_size: expected an int (-1) or None, got "
                        f"{type(local_window_size).__name__}")
    elif local_window_size not in (-1, None):
        raise ValueError(f"local_window_size: only used with mask_str='sliding_window_causal' "
                         f"(expected -1 for {mask.value!r}), got {local_window_size!r}")
    return mask


def check_q_scale(q_scale, q, layout: Layout, num_tokens: int) -> bool:
    """Validate q_scale_ptr; returns whether q holds e4m3 bytes (the 'qfp8' variant)."""
    q_bytes = dtype_name(q) in BYTE_DTYPES
    if q_scale is not None:
        if layout not in (Layout.FP8, Layout.FP8_ROPE_AWARE):
            raise ValueError(f"q_scale_ptr: only used with layouts 'fp8' and 'fp8_rope_aware', "
                             f"got one for a {layout.value!r} cache")
        check_device_array("q_scale_ptr", q_scale, dtypes=("float32",), shape=(num_tokens,))
    return layout is Layout.FP8 and q_bytes


def check_cache_scales(name, kv, extra_scales=None):
    """Per-token scales of a rope-aware cache: its own (PagedKVCollection checked
    their shape and dtype), else ``extra_scales`` (extra_scales_ptr, checked
    here by the same rule); either must be a CUDA array."""
    if kv.layout is not Layout.FP8_ROPE_AWARE:
        return None
    scales = kv.scales
    if scales is None:
        if extra_scales is None:
            raise ValueError(f"{name}: layout 'fp8_rope_aware' needs per-token scales "
                             f"[num_blocks, num_layers, page_size] float32, got None")
        from .cache import check_scales
        scales = check_scales(extra_scales, kv.blocks, kv.layout, name)
    check_device_array(name, scales)
    return scales


def check_q(q, layout: Layout, d_qk: int):
    check_device_array("q", q, dtypes=q_dtypes(layout), ndim=3)
    t, h, d = q.shape
    if not 1 <= h <= MAX_HEADS:
        raise ValueError(f"q: expected 1..{MAX_HEADS} heads (q.shape[1]), got {h}")
    if d != q_width(layout, d_qk):
        raise ValueError(f"q: expected last dimension {q_width(layout, d_qk)} to match the "
                         f"{layout.value} cache, got {d}")


def check_output(output, layout: Layout, num_tokens: int, num_heads: int):
    check_device_array("output", output, dtypes=(output_dtype(layout),),
                       shape=(num_tokens, num_heads, D_V))


def check_lse(lse, num_tokens: int, num_heads: int):
    if lse is not None:
        check_device_array("lse", lse, dtypes=("float32",), shape=(num_tokens, num_heads))


def check_attn_sink(attn_sink, num_heads: int):
    if attn_sink is not None:
        check_device_array("attn_sink_ptr", attn_sink, dtypes=("float32",), shape=(num_heads,))


def check_row_offsets(input_row_offsets, max_batch: int) -> int:
    check_device_array("input_row_offsets", input_row_offsets, dtypes=("int32", "uint32"), ndim=1)
    n = input_row_offsets.shape[0]
    if not 1 <= n <= max_batch + 1:
        raise ValueError(f"input_row_offsets: expected length batch_size + 1 with batch_size <= "
                         f"{max_batch} (rows of lookup_table), got length {n}")
    return n - 1


_SPARSE_ONLY = ("d_indices", "topk_lengths", "extra_k", "extra_d_indices", "extra_topk_lengths",
                "extra_scales_ptr", "logical_indices")


def check_dense_only(sparse_mla: bool, fold_shared_index: bool, indices_stride, extra_indices_stride,
                     given: dict):
    """Sparse-mode arguments must not be passed to a dense call (never ignored)."""
    sparse_mla = check_flag("sparse_mla", sparse_mla)
    fold_shared_index = check_flag("fold_shared_index", fold_shared_index)
    for name, v in (("indices_stride", indices_stride), ("extra_indices_stride", extra_indices_stride)):
        if v is not None:
            check_int(name, v, lo=0)
    if sparse_mla:
        return
    if fold_shared_index:
        raise ValueError("fold_shared_index: expected False without sparse_mla=True, got True")
    for name in _SPARSE_ONLY:
        if given.get(name) is not None:
            raise ValueError(f"{name}: only used with sparse_mla=True, got an argument in dense mode")
    if indices_stride not in (0, None) or extra_indices_stride not in (0, None):
        raise ValueError(f"indices_stride/extra_indices_stride: only used with sparse_mla=True, "
                         f"got {indices_stride}/{extra_indices_stride}")


def check_same_device(arrays: dict, device_id: int):
    for name, x in arrays.items():
        if x is None:
            continue
        dev = _device_of(x)
        if dev is not None and dev != device_id:
            raise ValueError(f"{name}: expected an array on CUDA device {device_id} (where q is), "
                             f"got device {dev}")


def _device_of(x):
    if hasattr(x, "device") and hasattr(x.device, "index") and hasattr(x.device, "type"):
        return x.device.index   # torch
    dev = getattr(x, "device", None)
    return getattr(dev, "id", None)


@dataclasses.dataclass(frozen=True)
class SparseArgs:
    """Validated sparse-mode arguments (strides resolved)."""

    d_indices: Any
    indices_stride: int
    topk_lengths: Any
    logical_indices: Any
    extra_k: Any
    extra_d_indices: Any
    extra_indices_stride: int
    extra_topk_lengths: Any
    extra_scales: Any = None      # per-token scales of a rope-aware extra stream


def _check_indices(name, x, num_tokens, stride_name, stride):
    check_device_array(name, x, dtypes=("int32",), ndim=2)
    if x.shape[0] != num_tokens:
        raise ValueError(f"{name}: expected {num_tokens} rows (one per query token), got shape {list(x.shape)}")
    check_int(stride_name, stride, lo=0)
    if stride == 0:
        return int(x.shape[1])
    if stride != x.shape[1]:
        raise ValueError(f"{stride_name}: expected {name}.shape[1] = {x.shape[1]} (or 0 to take it), got {stride}")
    return stride


def check_sparse(*, num_tokens, batch_size, layer_idx, kv, d_indices, indices_stride, topk_lengths,
                 logical_indices, extra_k, extra_d_indices, extra_indices_stride, extra_topk_lengths,
                 extra_scales_ptr) -> SparseArgs:
    if d_indices is None:
        raise ValueError("d_indices: sparse_mla=True needs [T, indices_stride] int32 indices, got None")
    stride = _check_indices("d_indices", d_indices, num_tokens, "indices_stride", indices_stride)
    if topk_lengths is not None:
        check_device_array("topk_lengths", topk_lengths, dtypes=("int32",), ndim=1)
        if topk_lengths.shape[0] < batch_size:
            raise ValueError(f"topk_lengths: expected at least {batch_size} entries, got {topk_lengths.shape[0]}")
    if logical_indices is not None:
        check_device_array("logical_indices", logical_indices, dtypes=("int32",),
                           shape=tuple(d_indices.shape))
    extra_stride = 0
    if extra_k is None:
        for name, v in (("extra_d_indices", extra_d_indices), ("extra_topk_lengths", extra_topk_lengths),
                        ("extra_scales_ptr", extra_scales_ptr)):
            if v is not None:
                raise ValueError(f"{name}: only used with an extra stream (extra_k), got one without it")
        if extra_indices_stride not in (0, None):
            raise ValueError(f"extra_indices_stride: only used with extra_k, got {extra_indices_stride}")
    else:
        from .cache import PagedKVCollection
        if not isinstance(extra_k, PagedKVCollection):
            raise TypeError(f"extra_k: expected a PagedKVCollection, got {type(extra_k).__name__}")
        if extra_k.layout is not kv.layout or extra_k.d_qk != kv.d_qk:
            raise ValueError(f"extra_k: expected the main cache's layout {kv.layout.value!r} with "
                             f"d_qk={kv.d_qk}, got {extra_k.layout.value!r} with d_qk={extra_k.d_qk}")
        if layer_idx >= extra_k.num_layers:
            raise ValueError(f"extra_k: layer_idx {layer_idx} needs at least {layer_idx + 1} layers, "
                             f"got {extra_k.num_layers}")
        check_device_array("extra_k.blocks", extra_k.blocks, dtypes=(dtype_name(kv.blocks),), ndim=4)
        if extra_d_indices is None:
            raise ValueError("extra_d_indices: an extra stream needs [T, extra_indices_stride] int32 "
                             "indices, got None")
        extra_stride = _check_indices("extra_d_indices", extra_d_indices, num_tokens,
                                      "extra_indices_stride", extra_indices_stride)
        if extra_topk_lengths is not None:
            check_device_array("extra_topk_lengths", extra_topk_lengths, dtypes=("int32",), ndim=1)
            if extra_topk_lengths.shape[0] < batch_size:
                raise ValueError(f"extra_topk_lengths: expected at least {batch_size} entries, "
                                 f"got {extra_topk_lengths.shape[0]}")
        if extra_scales_ptr is not None and kv.layout is not Layout.FP8_ROPE_AWARE:
            raise ValueError(f"extra_scales_ptr: only used with layout 'fp8_rope_aware', "
                             f"got one for {kv.layout.value!r}")
    extra_scales = None
    if extra_k is not None:
        if extra_k.scales is not None and extra_scales_ptr is not None:
            raise ValueError("extra_scales_ptr: expected None when extra_k carries scales, "
                             "got an array as well (pass one of the two)")
        extra_scales = check_cache_scales("extra_scales_ptr" if extra_k.scales is None else "extra_k.scales",
                                          extra_k, extra_scales_ptr)
    return SparseArgs(d_indices, stride, topk_lengths, logical_indices, extra_k, extra_d_indices,
                      extra_stride, extra_topk_lengths, extra_scales)
