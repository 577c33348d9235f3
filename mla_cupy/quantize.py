"""Host-side (NumPy) quantisers for the fp8 cache layouts of docs/spec.md §4, and their inverse.

Inputs are latent rows ``[..., 576]`` (512 latent "nope" dims ``k_c`` followed by
64 rope dims ``k_r``; plain ``fp8`` also takes 512-wide rows of a model without
rope) as bfloat16, float16, float32 or float64 values, all finite.  Outputs are
``uint8`` arrays holding the bytes of one record per row, ready to be written into
``PagedKVCollection.blocks``.  e4m3 always means ``float8_e4m3fn`` (ml_dtypes'
and torch's): 1 sign, 4 exponent (bias 7), 3 mantissa bits, no infinities, NaN =
``0x7f`` / ``0xff``, largest finite ±448, smallest subnormal 2^-9.  Multi-byte
values (float32 scales, bf16 rope) are stored little-endian whatever the host.

Rounding, everywhere: the scaled value ``x / s`` is computed in float64, rounded
to float32, clipped to ±448 (saturation: nothing becomes NaN) and rounded to e4m3
by ml_dtypes, round-to-nearest-even; bf16 values are rounded the same way (float32
first, then bf16, nearest-even).  Because ``x`` and ``s`` of bf16/float32 input are
float32 values, the float32 quotient is the correctly rounded one, i.e. what
``(x.float() / s.float()).to(torch.float8_e4m3fn)`` gives.

Formats
-------
``fp8`` (:func:`quantize_fp8`) -- ``D`` bytes (576, or 512 without rope): e4m3(x)
    of every dim, unit scale.  Values beyond ±448 saturate to ±448.  A tensor-wise
    scale, if the caller wants one, is theirs to divide out first (it folds into
    the softmax ``scale`` for K and into the output for V).

``fp8_rope_aware`` (:func:`quantize_fp8_rope_aware`) -- 640 bytes plus a float32
    σ per row.  ``σ = float32(max|k_c| / 448)`` (1 for an all-zero latent part), so
    the largest latent entry lands on ±448.  Bytes ``[0, 512)``: e4m3(k_c / σ);
    ``[512, 640)``: 64 bf16 of ``k_r / σ``.  σ goes to ``PagedKVCollection.scales``
    (not into the record).  Decoded: ``K = σ·[k_c' ++ k_r']``, ``V = σ·k_c'``.
    Queries use the same record with one σ per token (the maximum over all heads),
    :func:`quantize_q_rope_aware`, passed as ``q_scale_ptr``.

``fp8_ds_mla`` (:func:`quantize_fp8_ds_mla`) -- 656 bytes, FlashMLA's DeepSeek-V3.2
    "FP8 with scale" record: bytes ``[0, 512)`` e4m3 latent, ``[512, 528)`` four
    float32 scales (scale g covers latent dims ``[128g, 128g+128)``), ``[528, 656)``
    64 bf16 rope, **not** scaled.  Decoded: ``K = [k_c'·scale ++ k_r]``,
    ``V = k_c'·scale``.  Two scale rules:

    * ``scale_rule="amax"`` (default): ``scale_g = float32(max|k_c[g]| / 448)``, 1 for
      an all-zero group.  This is the rule of FlashMLA's ``tests/quant.py`` as
      released with the V3.2 sparse kernels (2025-09), except that FlashMLA divides
      in the input dtype (bf16: ``scale = bf16(amax / 448)``) where we keep the
      float32 quotient, and FlashMLA's 0/0 turns an all-zero group into NaN bytes
      where we use scale 1.  The records are the same format; the chosen scales
      (hence the bytes) can differ in the last bits.
    * ``scale_rule="ue8m0"``: ``scale_g = 2^ceil(log2(max(float32(amax / 448), 1e-4)))``
      with the log2 rounded to float32 before ``ceil``: a power of two, so it is
      exact in bf16 and fp16 too (FlashMLA's kernels multiply by the scale in bf16).
      This is ``_cast_scale_inv_to_ue8m0`` of FlashMLA's current ``tests/quant.py``
      (``FP8KVCacheLayout.V32_FP8Sparse``, 2026-01); for bf16 input the records are
      byte-identical to that function's output (checked against it under torch,
      see ``tests/test_quantize.py``).  An all-zero group gets 2^-13, as there.

:func:`dequantize` is the inverse; it delegates to
:func:`mla_cupy.reference.dequantize_rows`, the one implementation of the decode
rule (docs/spec.md §4) that the reference and the tests share.

Error bound (all formats): with ``s`` the row's (group's) scale, a latent value
``x`` with ``|x| ≤ 448·s`` decodes to ``x'`` with ``|x' - x| ≤ 2^-4·|x| + 2^-10·s``
(half an e4m3 step: 3 mantissa bits give steps of 2^-3 relative to the binade,
2^-9 absolute among subnormals), plus float32 rounding of ``x / s`` (≤ 2^-24
relative).  Since ``|x| ≤ max = 448·s``, that is at most ``2^-4·max + 2^-10·max/448``
< 2^-3 of the row (group) max.  bf16 rope values are within 2^-8 relative.
"""
from __future__ import annotations

import ml_dtypes
import numpy as np

__all__ = [
    "E4M3_MAX", "RECORD_BYTES", "quantize_fp8", "quantize_fp8_rope_aware", "quantize_q_rope_aware",
    "quantize_fp8_ds_mla", "dequantize",
]

from . import records
from .records import D_LATENT, D_QK, D_ROPE, E4M3_MAX  # noqa: F401 (D_ROPE, E4M3_MAX: public names)

DS_MLA_TILE = records.GROUP_DIMS   # latent dims per fp8_ds_mla scale
RECORD_BYTES = {x.value: records.row_bytes(x) for x in (records.Layout.FP8_ROPE_AWARE,
                                                      records.Layout.FP8_DS_MLA)}   # fp8: one byte per dim
SCALE_RULES = ("amax", "ue8m0")
_LAYOUTS = tuple(x.value for x in records.Layout)

_E4M3 = np.dtype(ml_dtypes.float8_e4m3fn)
_BF16 = np.dtype(ml_dtypes.bfloat16)
_F32 = np.dtype(np.float32)
_FLOAT_INPUTS = (_BF16, np.dtype(np.float16), _F32, np.dtype(np.float64))
_TINY_F32 = np.float32(2.0**-149)   # smallest positive float32 (a subnormal)


# ---------------------------------------------------------------- checks


def _float_rows(name, x, widths, ndim=None):
    """``x`` as float64 after checking dtype, width, rank and finiteness."""
    if x is None or isinstance(x, (str, bytes)):
        raise TypeError(f"{name}: expected an array of floats, got {type(x).__name__}")
    x = np.asarray(x)
    if x.dtype not in _FLOAT_INPUTS:
        raise TypeError(f"{name}: expected dtype bfloat16, float16, float32 or float64, got {x.dtype}")
    want = " or ".join(str(w) for w in widths)
    if ndim is not None and x.ndim != ndim:
        raise ValueError(f"{name}: expected {ndim} dimensions [T, H, {want}], got shape {list(x.shape)}")
    if x.ndim < 1 or x.shape[-1] not in widths:
        raise ValueError(f"{name}: expected rows of {want} values ([..., {want}]), got shape {list(x.shape)}")
    x = x.astype(np.float64)
    if not np.isfinite(x).all():
        bad = tuple(int(i) for i in np.argwhere(~np.isfinite(x))[0])
        raise ValueError(f"{name}: expected finite values, got {x[bad]} at index {bad}")
    return x


def _check_finite(name, what, arr):
    if not np.isfinite(np.asarray(arr, dtype=np.float64)).all():
        raise ValueError(f"{name}: {what} overflows its format (float32 / bf16); the values are too large")


def _on_device(x) -> bool:
    """CuPy arrays and CUDA tensors take the GPU path (mla_cupy.quantize_gpu)."""
    from .arrays import is_device_array
    return is_device_array(x)


# ---------------------------------------------------------------- encoders


def _e4m3_bytes(y):
    """float64 values (already divided by their scale) -> e4m3 bytes, saturating at ±448."""
    y32 = np.clip(y, -E4M3_MAX, E4M3_MAX).astype(_F32)   # clip in float64, then one f32 rounding
    return y32.astype(_E4M3).view(np.uint8)


def _bf16_le_bytes(y):
    """float64 values -> little-endian bf16 bytes ``[..., 2n]`` (via float32, nearest-even)."""
    with np.errstate(over="ignore"):
        b = y.astype(_F32).astype(_BF16)
    raw = b.view(np.uint16).astype("<u2")
    return raw.view(np.uint8).reshape(y.shape[:-1] + (2 * y.shape[-1],)), b


def _f32_le_bytes(s):
    return np.ascontiguousarray(s, dtype="<f4").view(np.uint8).reshape(s.shape[:-1] + (4 * s.shape[-1],))


def _amax_scale(amax):
    """float32(amax / 448); 1 where amax is 0; never 0 for amax > 0 (float32 underflow)."""
    with np.errstate(over="ignore"):
        s = (amax / E4M3_MAX).astype(_F32)
    s = np.where(amax == 0, np.float32(1.0), np.maximum(s, _TINY_F32)).astype(_F32)
    return s


def _ue8m0_scale(amax):
    """FlashMLA's ``_cast_scale_inv_to_ue8m0(amax.float() / 448)``: a float32 power of two."""
    with np.errstate(over="ignore"):
        s = amax.astype(_F32) / np.float32(E4M3_MAX)            # float32 division, as torch does
        s = np.maximum(s, np.float32(1e-4))
        e = np.ceil(np.log2(s.astype(np.float64)).astype(_F32))   # log2 rounded to float32, then ceil
        return np.exp2(e.astype(np.float64)).astype(_F32)


def quantize_fp8(rows) -> np.ndarray:
    """Latent rows ``[..., D]`` (D = 576 or 512) -> e4m3 bytes ``uint8 [..., D]``, unit scale.

    Every dim, rope included, is clipped to ±448 (saturation) and rounded to e4m3.
    """
    if _on_device(rows):
        from . import quantize_gpu
        return quantize_gpu.quantize_fp8(rows)
    x = _float_rows("rows", rows, (D_QK, D_LATENT))
    return _e4m3_bytes(x)


def _rope_aware_record(name, x, sigma):
    """x float64 [..., 576], sigma float32 broadcastable to [..., 1] -> uint8 [..., 640]."""
    s = sigma.astype(np.float64)
    with np.errstate(over="ignore"):
        latent = _e4m3_bytes(x[..., :D_LATENT] / s)
        rope, rope_vals = _bf16_le_bytes(x[..., D_LATENT:] / s)
    _check_finite(name, "the rope part k_r / σ in bf16", rope_vals)
    return np.concatenate([latent, rope], axis=-1)


def quantize_fp8_rope_aware(rows) -> tuple[np.ndarray, np.ndarray]:
    """Latent rows ``[..., 576]`` -> ``(uint8 [..., 640], σ float32 [...])``.

    ``σ = float32(max|k_c| / 448)`` per row (1 for an all-zero latent part); bytes
    ``[0, 512)`` = e4m3(k_c / σ), ``[512, 640)`` = little-endian bf16(k_r / σ).
    """
    if _on_device(rows):
        from . import quantize_gpu
        return quantize_gpu.quantize_fp8_rope_aware(rows)
    x = _float_rows("rows", rows, (D_QK,))
    sigma = _amax_scale(np.abs(x[..., :D_LATENT]).max(axis=-1))
    _check_finite("rows", "the scale σ = max|k_c| / 448 in float32", sigma)
    return _rope_aware_record("rows", x, sigma[..., None]), sigma


def quantize_q_rope_aware(q) -> tuple[np.ndarray, np.ndarray]:
    """Queries ``[T, H, 576]`` -> ``(uint8 [T, H, 640], q_scale float32 [T])``.

    One σ per token, over all its heads: ``σ_Q[t] = float32(max_h max|q_c[t, h]| / 448)``
    (1 for an all-zero token), so ``Q_t = σ_Q[t]·[q_c' ++ q_r']`` (docs/spec.md §4); every head
    is encoded like :func:`quantize_fp8_rope_aware` with that σ.
    """
    if _on_device(q):
        from . import quantize_gpu
        return quantize_gpu.quantize_q_rope_aware(q)
    x = _float_rows("q", q, (D_QK,), ndim=3)
    amax = np.abs(x[..., :D_LATENT]).max(axis=(1, 2), initial=0.0)
    sigma = _amax_scale(amax)
    _check_finite("q", "the scale σ_Q = max|q_c| / 448 in float32", sigma)
    return _rope_aware_record("q", x, sigma[:, None, None]), sigma


def quantize_fp8_ds_mla(rows, *, scale_rule: str = "amax") -> np.ndarray:
    """Latent rows ``[..., 576]`` -> FlashMLA V3.2 fp8 records ``uint8 [..., 656]``.

    Bytes ``[0, 512)`` = e4m3(k_c / scale_g) for the 128-dim group g of each dim,
    ``[512, 528)`` = the four scales as little-endian float32, ``[528, 656)`` =
    little-endian bf16(k_r), unscaled.  ``scale_rule`` picks the scales ("amax":
    ``max|k_c[g]| / 448``, 1 for a zero group; "ue8m0": FlashMLA's power of two);
    see the module docstring.
    """
    if _on_device(rows):
        if scale_rule not in SCALE_RULES:
            raise ValueError(f"scale_rule: expected one of {SCALE_RULES}, got {scale_rule!r}")
        from . import quantize_gpu
        return quantize_gpu.quantize_fp8_ds_mla(rows, scale_rule=scale_rule)
    if scale_rule not in SCALE_RULES:
        raise ValueError(f"scale_rule: expected one of {SCALE_RULES}, got {scale_rule!r}")
    x = _float_rows("rows", rows, (D_QK,))
    lead = x.shape[:-1]
    groups = x[..., :D_LATENT].reshape(lead + (D_LATENT // DS_MLA_TILE, DS_MLA_TILE))
    amax = np.abs(groups).max(axis=-1)
    scales = _amax_scale(amax) if scale_rule == "amax" else _ue8m0_scale(amax)
    _check_finite("rows", "a group scale max|k_c| / 448 in float32", scales)
    latent = _e4m3_bytes(groups / scales.astype(np.float64)[..., None]).reshape(lead + (D_LATENT,))
    rope, rope_vals = _bf16_le_bytes(x[..., D_LATENT:])
    _check_finite("rows", "the rope part k_r in bf16", rope_vals)
    return np.concatenate([latent, _f32_le_bytes(scales), rope], axis=-1)


# ---------------------------------------------------------------- decoder


def dequantize(rows, layout, scales=None) -> tuple[np.ndarray, np.ndarray]:
    """Records ``[..., W]`` of ``layout`` -> ``(K float64 [..., D_qk], V float64 [..., 512])``.

    ``rows`` holds uint8 bytes for the fp8 layouts ("fp8" also takes float8_e4m3fn
    values; "bf16"/"fp16" take their own values); ``scales`` (``[...]``, one σ per
    row) is required for "fp8_rope_aware" and refused for every other layout.  The
    decode itself is :func:`mla_cupy.reference.dequantize_rows`.
    """
    if _on_device(rows):
        from . import quantize_gpu
        return quantize_gpu.dequantize(rows, layout, scales)
    from .reference import dequantize_rows

    layout = getattr(layout, "value", layout)
    if layout not in _LAYOUTS:
        raise ValueError(f"layout: expected one of {_LAYOUTS}, got {layout!r}")
    if rows is None or isinstance(rows, (str, bytes)):
        raise TypeError(f"rows: expected an array of records, got {type(rows).__name__}")
    rows = np.asarray(rows)
    if rows.ndim < 1:
        raise ValueError(f"rows: expected [..., row] records, got a scalar (shape {list(rows.shape)})")
    lead = rows.shape[:-1]
    sigma = None
    if layout == "fp8_rope_aware":
        if scales is None:
            raise ValueError("scales: fp8_rope_aware needs one σ per row, got None")
        sigma = np.asarray(scales)
        if sigma.dtype.kind not in "fiu":
            raise TypeError(f"scales: expected float32 values, got {sigma.dtype}")
        if sigma.shape != lead:
            raise ValueError(f"scales: expected shape {list(lead)} (one per row), got {list(sigma.shape)}")
        sigma = sigma.reshape(-1)
    elif scales is not None:
        raise ValueError(f"scales: only layout 'fp8_rope_aware' takes per-row scales, got them for {layout!r}")
    k, v = dequantize_rows(rows.reshape(-1, rows.shape[-1]), layout, sigma)
    return k.reshape(lead + (k.shape[-1],)), v.reshape(lead + (v.shape[-1],))
