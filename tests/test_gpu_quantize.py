"""GPU quantisers against the NumPy ones (marker ``gpu``): identical bytes and
scales for every format and input dtype; GPU dequantisation equals NumPy's."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from mla_cupy import quantize as Q

pytestmark = pytest.mark.gpu

DTYPES = {"bf16": ml_dtypes.bfloat16, "fp16": np.float16, "fp32": np.float32}


def _rows(rng, shape, dtype):
    """Mixed magnitudes: scales that are not powers of two, zero groups, tiny
    values that flush to zero in e4m3, values past 448 (saturate in plain fp8)."""
    x = rng.standard_normal(shape) * rng.choice([1e-3, 0.37, 1.0, 7.0, 300.0], size=shape[:-1] + (1,))
    x[..., 128:256][rng.random(shape[:-1]) < 0.2] = 0.0          # zero latent groups
    x[..., 5] = 500.0                                            # saturates in plain fp8
    x[..., 9] = 1e-6
    return x.astype(DTYPES[dtype])


@pytest.mark.parametrize("dtype", list(DTYPES))
@pytest.mark.parametrize("fmt", ["fp8", "fp8_qk512", "fp8_rope_aware", "fp8_ds_mla", "fp8_ds_mla_ue8m0"])
def test_gpu_bytes_equal_numpy(rng, fmt, dtype):
    import cupy
    width = 512 if fmt == "fp8_qk512" else 576
    x = _rows(rng, (3, 37, width), dtype)
    if dtype == "fp16":   # keep fp16 finite
        x = np.clip(x.astype(np.float32), -6e4, 6e4).astype(np.float16)
    xd = cupy.asarray(x)
    if fmt in ("fp8", "fp8_qk512"):
        got, want = Q.quantize_fp8(xd).get(), Q.quantize_fp8(x)
        assert np.array_equal(got, want)
    elif fmt == "fp8_rope_aware":
        (g, gs), (w, ws) = Q.quantize_fp8_rope_aware(xd), Q.quantize_fp8_rope_aware(x)
        assert np.array_equal(gs.get(), ws) and np.array_equal(g.get(), w)
        k_gpu, v_gpu = Q.dequantize(g, "fp8_rope_aware", gs)
        k_np, v_np = Q.dequantize(w, "fp8_rope_aware", ws)
        assert np.allclose(k_gpu.get(), k_np, rtol=2e-7, atol=0) and np.allclose(v_gpu.get(), v_np, rtol=2e-7, atol=0)
    else:
        rule = "ue8m0" if fmt.endswith("ue8m0") else "amax"
        got, want = Q.quantize_fp8_ds_mla(xd, scale_rule=rule).get(), Q.quantize_fp8_ds_mla(x, scale_rule=rule)
        diff = np.argwhere(got != want)
        assert diff.size == 0, f"{len(diff)} bytes differ, first at {diff[0].tolist()}"
        k_gpu, v_gpu = Q.dequantize(cupy.asarray(got), "fp8_ds_mla")
        k_np, v_np = Q.dequantize(want, "fp8_ds_mla")
        assert np.allclose(k_gpu.get(), k_np, rtol=2e-7, atol=0)


@pytest.mark.parametrize("dtype", list(DTYPES))
def test_gpu_query_rope_aware_equals_numpy(rng, dtype):
    import cupy
    q = _rows(rng, (5, 20, 576), dtype)
    if dtype == "fp16":
        q = np.clip(q.astype(np.float32), -6e4, 6e4).astype(np.float16)
    (g, gs), (w, ws) = Q.quantize_q_rope_aware(cupy.asarray(q)), Q.quantize_q_rope_aware(q)
    assert np.array_equal(gs.get(), ws) and np.array_equal(g.get(), w)


def test_gpu_quantised_cache_decodes_like_the_reference(rng):
    """bf16 cache quantised on the GPU to the DeepSeek-V3.2 record, decoded by the kernel."""
    import cupy
    from mla_cupy import PagedKVCollection, mla_decode
    from mla_cupy.reference import mla_decode_reference
    from mla_cupy.testing import compare, nan_filled

    blocks = rng.standard_normal((24, 64, 576)).astype(ml_dtypes.bfloat16)
    lookup = rng.permutation(24).reshape(3, 8).astype(np.int32)
    lengths = np.array([100, 511, 7], np.int32)
    q = rng.standard_normal((3, 16, 576)).astype(ml_dtypes.bfloat16)
    offs = np.arange(4, dtype=np.int32)
    records = Q.quantize_fp8_ds_mla(cupy.asarray(blocks))
    kv = PagedKVCollection(records, cupy.asarray(lookup), cupy.asarray(lengths), 64)
    out, lse = nan_filled((3, 16, 512), ml_dtypes.bfloat16), nan_filled((3, 16), np.float32)
    mla_decode(cupy.asarray(q), kv, cupy.asarray(offs), out=out, lse=lse)
    ref = mla_decode_reference(q, offs, PagedKVCollection(records.get(), lookup, lengths, 64),
                               0, 576 ** -0.5)
    cmp = compare(out.get().astype(np.float32), lse.get(), *ref, dtype=ml_dtypes.bfloat16,
                  v_scale=float(np.abs(blocks.astype(np.float32)[..., :512]).max()))
    assert cmp.ok, cmp.message
