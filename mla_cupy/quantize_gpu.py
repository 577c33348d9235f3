"""The fp8 quantisers of :mod:`mla_cupy.quantize` on the GPU (CuPy arrays or
CUDA tensors in, CuPy arrays out).

Quantising runs the ``mla_quantize_*`` kernels, byte-identical to the NumPy
functions on finite input (needs sm_89+: e4m3 conversion instructions);
dequantising uses CuPy array operations (an exact 256-entry e4m3 table) and
returns float32.  Inputs are not checked for NaN/inf on the device (that would
need a device-to-host copy): non-finite values give unspecified bytes.
"""
from __future__ import annotations

import functools
import math

import ml_dtypes
import numpy as np

from .arrays import dtype_name, to_cupy
from .render import QUANTIZE_WARPS as _WARPS
from . import records
from .abi import QUANTIZE
from .records import D_LATENT, D_QK, Layout
from .variants import QuantizeKey

_IN = {"bfloat16": "bf16", "float16": "fp16", "float32": "fp32"}


def _rows_in(name, x, widths, ndim=None):
    x = to_cupy(x, name)
    dt = dtype_name(x)
    if dt not in _IN:
        raise TypeError(f"{name}: expected dtype bfloat16, float16 or float32 on the GPU, got {dt}")
    if (ndim is not None and x.ndim != ndim) or x.ndim < 1 or x.shape[-1] not in widths:
        raise ValueError(f"{name}: expected rows [..., {' or '.join(map(str, widths))}]"
                         f"{' with 3 dimensions' if ndim else ''}, got shape {list(x.shape)}")
    import cupy
    return cupy.ascontiguousarray(x)


def _run(target, name, x, *, per_token=False):
    import cupy
    from .compiler import get_kernel

    dev = cupy.cuda.runtime.getDevice()
    cc = int(cupy.cuda.Device(dev).compute_capability)
    key = QuantizeKey(target, _IN[dtype_name(x)])
    if cc < key.min_sm:
        raise ValueError(f"{name}: GPU quantisation needs sm_{key.min_sm}+ (e4m3 conversions), "
                         f"device {dev} is sm_{cc}; use the NumPy functions")
    rec = key.row_bytes
    lead = x.shape[:-1]
    rows = math.prod(lead)
    out = cupy.empty(lead + (rec,), dtype=np.uint8)
    if per_token:
        tokens, heads = x.shape[0], x.shape[1]
        sig = cupy.empty(tokens, dtype=np.float32)
        grid = (tokens,)
    else:
        heads = 1
        sig = cupy.empty(lead, dtype=np.float32) if "rope_aware" in target else None
        grid = (max(1, -(-rows // _WARPS)),)
    if rows:
        get_kernel(key, dev)(grid, (32 * _WARPS,), QUANTIZE.pack(
            {"in": x, "out": out, "sigmas": sig, "rows": rows, "num_heads": heads}))
    return out, sig


def quantize_fp8(rows):
    x = _rows_in("rows", rows, (D_QK, D_LATENT))
    return _run("fp8" if x.shape[-1] == D_QK else "fp8_qk512", "rows", x)[0]


def quantize_fp8_rope_aware(rows):
    return _run("fp8_rope_aware", "rows", _rows_in("rows", rows, (D_QK,)))


def quantize_q_rope_aware(q):
    return _run("fp8_rope_aware_q", "q", _rows_in("q", q, (D_QK,), ndim=3), per_token=True)


def quantize_fp8_ds_mla(rows, *, scale_rule="amax"):
    target = "fp8_ds_mla" if scale_rule == "amax" else "fp8_ds_mla_ue8m0"
    return _run(target, "rows", _rows_in("rows", rows, (D_QK,)))[0]


@functools.lru_cache(maxsize=None)
def _e4m3_table(device_id):
    import cupy
    with cupy.cuda.Device(device_id):
        return cupy.asarray(np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float32))


def _bf16_to_f32(b):
    import cupy
    u = cupy.ascontiguousarray(b).view(np.uint16).astype(np.uint32) << 16
    return u.view(np.float32)


def dequantize(rows, layout, scales=None):
    """Records ``[..., W]`` -> ``(K float32 [..., D_qk], V float32 [..., 512])`` on the GPU."""
    import cupy

    layout = getattr(layout, "value", layout)
    rows = cupy.ascontiguousarray(to_cupy(rows, "rows"))
    if dtype_name(rows) != "uint8":
        raise TypeError(f"rows: expected uint8 record bytes, got {dtype_name(rows)}")
    if layout not in ("fp8", "fp8_rope_aware", "fp8_ds_mla"):
        raise ValueError(f"layout: expected 'fp8', 'fp8_rope_aware' or 'fp8_ds_mla', got {layout!r}")
    width = tuple(records.row_bytes(layout, d) for d in records.D_QK_CHOICES[Layout(layout)])
    if rows.shape[-1] not in width:
        raise ValueError(f"rows: expected records of {width} bytes for {layout!r}, got {list(rows.shape)}")
    if (scales is None) != (layout != "fp8_rope_aware"):
        raise ValueError(f"scales: {'required' if layout == 'fp8_rope_aware' else 'not used'} "
                         f"for layout {layout!r}")
    table = _e4m3_table(cupy.cuda.runtime.getDevice())
    lead = rows.shape[:-1]
    if layout == "fp8":
        k = table[rows]
        return k, k[..., :D_LATENT]
    latent = table[rows[..., :D_LATENT]]
    rope_at = records.rope_at(layout)
    rope = _bf16_to_f32(rows[..., rope_at:rope_at + 2 * records.D_ROPE])
    if layout == "fp8_rope_aware":
        sigma = to_cupy(scales, "scales").astype(np.float32)[..., None]
        k = cupy.concatenate([latent, rope], axis=-1) * sigma
        return k, k[..., :D_LATENT]
    at = records.scales_at(layout)
    group = cupy.ascontiguousarray(rows[..., at:at + records.NUM_GROUPS * records.SCALE_BYTES]).view(np.float32)
    v = (latent.reshape(lead + (records.NUM_GROUPS, records.GROUP_DIMS)) * group[..., None]).reshape(lead + (D_LATENT,))
    return cupy.concatenate([v, rope], axis=-1), v
