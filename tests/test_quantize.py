"""mla_cupy.quantize (the fp8 encoders of docs/spec.md §4) and the fp8 case builders of mla_cupy.testing.

CPU only: NumPy, ml_dtypes and the NumPy reference.
"""
from __future__ import annotations

import hashlib
import struct

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mla_cupy.quantize import (dequantize, quantize_fp8, quantize_fp8_ds_mla, quantize_fp8_rope_aware,
                               quantize_q_rope_aware)
from mla_cupy.testing import (FP8_LAYOUTS, NAN_BYTE, Tolerance, compare, dequantization_slack, make_case,
                              make_sparse_case, nan_filled, reference, tolerance, tolerance_for, v_max)

E4M3 = ml_dtypes.float8_e4m3fn
BF16 = ml_dtypes.bfloat16

# All finite e4m3 bytes (0x7f and 0xff are NaN), their values, and the subnormal ones
# (exponent bits 0, mantissa not 0): k * 2^-9 for k = 1..7.
FINITE_BYTES = np.array([b for b in range(256) if b & 0x7F != 0x7F], dtype=np.uint8)
FINITE_VALUES = FINITE_BYTES.view(E4M3).astype(np.float64)
SUBNORMAL_BYTES = np.array([b for b in range(256) if b & 0x78 == 0 and b & 0x07], dtype=np.uint8)


# --- the error bound ------------------------------------------------------------------
#
# e4m3 has 3 mantissa bits: inside a binade [2^e, 2^(e+1)) (e >= -6) the step is 2^(e-3),
# so rounding to nearest moves y by at most half a step, 2^(e-4) <= 2^-4 |y|. Below 2^-6
# (subnormals) the step is 2^-9, so the error is at most 2^-10. The quantiser rounds
# y = x / s to float32 first (<= 2^-24 |y| more), and decoding multiplies by the same
# stored s exactly (float64). Hence, for |x| <= 448 s:
#
#     |x' - x| <= 2^-4 |x| + 2^-10 s        (up to a 2^-20 relative slack)
#
# which is below 2^-3 of the row (group) max 448 s, the step the brief asks for. bf16 has
# 8 significant bits: rounding moves a value by at most 2^-8 of itself.

SLACK = 1 + 2.0**-20


def e4m3_bound(x, s):
    return (2.0**-4 * np.abs(x) + 2.0**-10 * s) * SLACK


def bf16_bound(x):
    return 2.0**-8 * np.abs(x) * SLACK


def random_rows(rng, n, log2_scale=0, width=576):
    """N(0,1) rows times 2^log2_scale times a random non-power-of-two factor, plus some zeros."""
    x = rng.standard_normal((n, width)) * 2.0**log2_scale * rng.uniform(1.01, 1.99)
    x[rng.random((n, width)) < 0.05] = 0.0
    return x


# --- round trips ----------------------------------------------------------------------


@given(seed=st.integers(0, 2**32 - 1), log2_scale=st.integers(-20, 20),
       dtype=st.sampled_from(["float64", "float32", "bfloat16"]))
def test_rope_aware_round_trip_within_bound(seed, log2_scale, dtype):
    rng = np.random.default_rng(seed)
    given_rows = random_rows(rng, 6, log2_scale).astype(BF16 if dtype == "bfloat16" else dtype)
    x = given_rows.astype(np.float64)
    rec, sigma = quantize_fp8_rope_aware(given_rows)
    assert rec.dtype == np.uint8 and rec.shape == (6, 640)
    assert sigma.dtype == np.float32 and sigma.shape == (6,)
    np.testing.assert_array_equal(sigma, (np.abs(x[:, :512]).max(1) / 448).astype(np.float32))
    k, v = dequantize(rec, "fp8_rope_aware", sigma)
    s = sigma.astype(np.float64)[:, None]
    assert np.all(np.abs(k[:, :512] - x[:, :512]) <= e4m3_bound(x[:, :512], s))
    assert np.all(np.abs(k[:, :512] - x[:, :512]) <= 2.0**-3 * 448 * s)          # the brief's looser bound
    assert np.all(np.abs(k[:, 512:] - x[:, 512:]) <= bf16_bound(x[:, 512:]))
    np.testing.assert_array_equal(v, k[:, :512])
    # the largest latent entry of each row is encoded as exactly ±448
    top = np.abs(x[:, :512]).argmax(1)
    assert set(rec[np.arange(6), top].tolist()) <= {0x7E, 0xFE}


@given(seed=st.integers(0, 2**32 - 1), log2_scale=st.integers(-20, 20), rule=st.sampled_from(["amax", "ue8m0"]))
def test_ds_mla_round_trip_within_bound(seed, log2_scale, rule):
    rng = np.random.default_rng(seed)
    x = random_rows(rng, 5, log2_scale)
    x[:, 128:256] *= 2.0**-7 * 1.3           # groups of very different size
    x[0, 384:512] = 0.0                      # a zero group
    x = x.astype(BF16).astype(np.float64)    # bf16 input: the rope part is then stored exactly
    rec = quantize_fp8_ds_mla(x.astype(BF16), scale_rule=rule)
    assert rec.dtype == np.uint8 and rec.shape == (5, 656)
    scales = rec[:, 512:528].copy().view("<f4").astype(np.float64)
    amax = np.abs(x[:, :512]).reshape(5, 4, 128).max(-1)
    if rule == "amax":
        np.testing.assert_array_equal(scales, np.where(amax == 0, 1.0, (amax / 448).astype(np.float32)))
    else:   # powers of two, never below amax / 448 (no saturation), 2^-13 for a zero group
        mant, _ = np.frexp(scales)
        assert np.all(mant == 0.5) and np.all(scales >= amax / 448 * (1 - 2.0**-20))
        assert scales[0, 3] == 2.0**-13
    k, v = dequantize(rec, "fp8_ds_mla")
    s = np.repeat(scales, 128, axis=1)
    assert np.all(np.abs(k[:, :512] - x[:, :512]) <= e4m3_bound(x[:, :512], s))
    np.testing.assert_array_equal(k[:, 512:], x[:, 512:])                        # rope unscaled, exact
    np.testing.assert_array_equal(v, k[:, :512])


@given(seed=st.integers(0, 2**32 - 1), width=st.sampled_from([576, 512]), log2_scale=st.integers(-12, 7))
def test_fp8_round_trip_within_bound(seed, width, log2_scale):
    rng = np.random.default_rng(seed)
    x = np.clip(random_rows(rng, 4, log2_scale, width), -448, 448)
    rec = quantize_fp8(x)
    assert rec.dtype == np.uint8 and rec.shape == (4, width)
    k, v = dequantize(rec, "fp8")
    assert k.shape == (4, width) and v.shape == (4, 512)
    assert np.all(np.abs(k - x) <= e4m3_bound(x, 1.0))


def test_scales_are_not_powers_of_two_for_generic_rows():
    x = random_rows(np.random.default_rng(3), 50)
    _, sigma = quantize_fp8_rope_aware(x)
    scales = quantize_fp8_ds_mla(x)[:, 512:528].copy().view("<f4")
    assert np.all(np.frexp(sigma)[0] != 0.5) and np.all(np.frexp(scales)[0] != 0.5)


# --- exact values: ±448, subnormals, power-of-two scales --------------------------------


def exact_latent_bytes(rng, n, groups):
    """Random finite e4m3 bytes [n, 512] holding every subnormal and ±448 in each group."""
    b = rng.choice(FINITE_BYTES, size=(n, 512))
    width = 512 // groups
    for g in range(groups):
        pos = rng.choice(width, size=2 + SUBNORMAL_BYTES.size, replace=False) + g * width
        b[:, pos] = np.concatenate([[0x7E, 0xFE], SUBNORMAL_BYTES])
    return b


def test_fp8_every_finite_e4m3_value_survives_exactly():
    x = np.resize(FINITE_VALUES, (3, 576))
    np.testing.assert_array_equal(quantize_fp8(x), np.resize(FINITE_BYTES, (3, 576)))
    np.testing.assert_array_equal(dequantize(quantize_fp8(x), "fp8")[0], x)


def test_fp8_saturates_and_flushes():
    x = np.zeros((1, 512))
    x[0, :8] = [448.0, -448.0, 449.0, -1e4, 1e30, 2.0**-9, 2.0**-11, -(2.0**-11)]
    k, _ = dequantize(quantize_fp8(x), "fp8")
    np.testing.assert_array_equal(k[0, :8], [448, -448, 448, -448, 448, 2.0**-9, 0.0, -0.0])


@pytest.mark.parametrize("log2_scale", [-10, -3, 0, 5, 10])
def test_rope_aware_exact_for_e4m3_values_times_a_power_of_two(log2_scale):
    rng = np.random.default_rng(log2_scale + 100)
    latent = exact_latent_bytes(rng, 4, 1)
    rope = rng.standard_normal((4, 64)).astype(BF16)
    sigma = 2.0**log2_scale
    x = np.concatenate([latent.view(E4M3).astype(np.float64), rope.astype(np.float64)], 1) * sigma
    rec, got_sigma = quantize_fp8_rope_aware(x)
    np.testing.assert_array_equal(got_sigma, np.full(4, sigma, np.float32))
    np.testing.assert_array_equal(rec[:, :512], latent)
    np.testing.assert_array_equal(rec[:, 512:].copy().view("<u2"), rope.view(np.uint16))
    k, v = dequantize(rec, "fp8_rope_aware", got_sigma)
    np.testing.assert_array_equal(k, x)


def test_ds_mla_exact_for_e4m3_values_times_powers_of_two_both_rules():
    rng = np.random.default_rng(7)
    latent = exact_latent_bytes(rng, 3, 4)
    exps = np.array([[-9, 0, 4, 11], [2, 2, -1, -12], [7, -7, 0, 1]])
    group_scale = np.exp2(exps.astype(np.float64))
    rope = (rng.standard_normal((3, 64)) * 100).astype(BF16)
    x = np.concatenate([latent.view(E4M3).astype(np.float64) * np.repeat(group_scale, 128, 1),
                        rope.astype(np.float64)], 1)
    amax_rec = quantize_fp8_ds_mla(x)
    np.testing.assert_array_equal(amax_rec, quantize_fp8_ds_mla(x, scale_rule="ue8m0"))
    np.testing.assert_array_equal(amax_rec[:, :512], latent)
    np.testing.assert_array_equal(amax_rec[:, 512:528].copy().view("<f4"), group_scale.astype(np.float32))
    np.testing.assert_array_equal(dequantize(amax_rec, "fp8_ds_mla")[0], x)


# --- zero rows, byte layout, little-endian ----------------------------------------------


def test_zero_rows():
    z = np.zeros((2, 576))
    np.testing.assert_array_equal(quantize_fp8(z), 0)
    rec, sigma = quantize_fp8_rope_aware(z)
    np.testing.assert_array_equal(rec, 0)
    np.testing.assert_array_equal(sigma, [1.0, 1.0])
    rec = quantize_fp8_ds_mla(z)
    np.testing.assert_array_equal(rec[:, :512], 0)
    np.testing.assert_array_equal(rec[:, 512:528].copy().view("<f4"), 1.0)
    np.testing.assert_array_equal(rec[:, 528:], 0)
    np.testing.assert_array_equal(quantize_fp8_ds_mla(z, scale_rule="ue8m0")[:, 512:528].copy().view("<f4"), 2.0**-13)
    # a zero latent part with a rope part: σ = 1, the rope stored as is
    z[:, 512:] = 1.5
    rec, sigma = quantize_fp8_rope_aware(z)
    assert sigma.tolist() == [1.0, 1.0] and rec[0, 512:514].tolist() == [0xC0, 0x3F]


def test_byte_positions_and_little_endian():
    x = np.zeros((1, 576))
    x[0, 0:128], x[0, 128:256], x[0, 384:512] = 1.0, 2.0, -3.0     # group 2 is zero
    x[0, 512::2], x[0, 513::2] = 1.5, -2.0                         # bf16 0x3FC0, 0xC000
    rope_le = [0xC0, 0x3F, 0x00, 0xC0] * 32

    rec = quantize_fp8_ds_mla(x)
    assert rec.shape == (1, 656)
    np.testing.assert_array_equal(rec[0, 512:528].view("<f4"), np.float32([1 / 448, 2 / 448, 1.0, 3 / 448]))
    assert rec[0, 512:516].tobytes() == struct.pack("<f", 1 / 448)   # little-endian float32
    assert rec[0, 528:656].tolist() == rope_le                     # rope right after the scales, unscaled
    assert set(rec[0, 0:256].tolist()) == {0x7E} and set(rec[0, 256:384].tolist()) == {0}
    assert set(rec[0, 384:512].tolist()) == {0xFE}

    y = x.copy()
    y[0, :512] = 0.0
    y[0, 7] = 896.0                                               # σ = 2
    y[0, 512::2], y[0, 513::2] = 3.0, -4.0                         # / σ -> 1.5, -2.0
    rec, sigma = quantize_fp8_rope_aware(y)
    assert rec.shape == (1, 640) and sigma.tolist() == [2.0]
    assert rec[0, 512:640].tolist() == rope_le                     # rope right after the latent, / σ
    assert rec[0, 7] == 0x7E and np.count_nonzero(rec[0, :512]) == 1

    z = np.zeros((1, 576))
    z[0, :3] = [1.0, -2.0, 448.0]
    assert quantize_fp8(z)[0, :4].tolist() == [0x38, 0xC0, 0x7E, 0x00]


# --- queries ----------------------------------------------------------------------------


def test_quantize_q_rope_aware_one_sigma_per_token():
    rng = np.random.default_rng(5)
    q = rng.standard_normal((3, 4, 576))
    q[1] = 0.0
    q[2, 3, :512] *= 10                                            # the token's max is in head 3
    rec, q_scale = quantize_q_rope_aware(q.astype(np.float32))
    assert rec.shape == (3, 4, 640) and rec.dtype == np.uint8
    assert q_scale.shape == (3,) and q_scale.dtype == np.float32
    q = q.astype(np.float32).astype(np.float64)
    np.testing.assert_array_equal(q_scale, np.where(np.arange(3) == 1, 1.0,
                                                    (np.abs(q[:, :, :512]).max((1, 2)) / 448).astype(np.float32)))
    k, _ = dequantize(rec, "fp8_rope_aware", np.repeat(q_scale[:, None], 4, 1))
    s = q_scale.astype(np.float64)[:, None, None]
    assert np.all(np.abs(k[..., :512] - q[..., :512]) <= e4m3_bound(q[..., :512], s))
    assert np.all(np.abs(k[..., 512:] - q[..., 512:]) <= bf16_bound(q[..., 512:]))
    np.testing.assert_array_equal(rec[1], 0)
    # every head of a token shares σ: one head holds ±448, the others may not
    assert 0x7E in rec[2, 3, :512] or 0xFE in rec[2, 3, :512]


# --- FlashMLA compatibility -------------------------------------------------------------


def flashmla_check_input():
    rng = np.random.default_rng(2025)
    x = rng.standard_normal((7, 64, 576)).astype(np.float32)
    x *= np.exp2(rng.integers(-30, 12, size=(7, 64, 1)))
    x[0, 0, :128] = 0.0
    x[0, 1, :] = 0.0
    x[1, 2, 128:256] *= 1e-6
    x[1, 3, :128] = 448 * 2.0**-5
    return x.astype(BF16)


def test_ds_mla_ue8m0_bytes_match_flashmla_quantize_k_cache():
    # The expected digest is of the records FlashMLA's tests/quant.py (2026-01,
    # quantize_k_cache(x[:, :, None], FP8KVCacheLayout.V32_FP8Sparse)) returned for this
    # input under torch 2.13 (CPU), viewed as uint8: byte-identical to ours at that time.
    x = flashmla_check_input()
    assert hashlib.sha256(x.view(np.uint16).astype("<u2").tobytes()).hexdigest() == (
        "1a99da57f5c512d7db3b20e69a650d4ceb9ef7acd9ac809533717e01d43fe415"
    ), "numpy's random stream changed: the recorded FlashMLA digest no longer applies"
    rec = quantize_fp8_ds_mla(x, scale_rule="ue8m0")
    assert hashlib.sha256(rec.tobytes()).hexdigest() == (
        "1220241eecb53cba491b5f78cb8d4e3f822264cb382ef7548245017b8b1242ab"
    )


# --- dequantize -------------------------------------------------------------------------


def test_dequantize_keeps_leading_axes():
    x = random_rows(np.random.default_rng(9), 6).reshape(2, 3, 576)
    rec, sigma = quantize_fp8_rope_aware(x)
    k, v = dequantize(rec, "fp8_rope_aware", sigma)
    assert k.shape == (2, 3, 576) and v.shape == (2, 3, 512) and k.dtype == np.float64
    k2, _ = dequantize(rec.reshape(6, 640), "fp8_rope_aware", sigma.reshape(6))
    np.testing.assert_array_equal(k.reshape(6, 576), k2)
    k, v = dequantize(quantize_fp8(x[..., :512]), "fp8")
    assert k.shape == (2, 3, 512) and v.shape == (2, 3, 512)
    k, v = dequantize(quantize_fp8_ds_mla(x), "fp8_ds_mla")
    assert k.shape == (2, 3, 576) and v.shape == (2, 3, 512)


# --- errors -----------------------------------------------------------------------------


@pytest.mark.parametrize("fn", [quantize_fp8, quantize_fp8_rope_aware, quantize_fp8_ds_mla])
@pytest.mark.parametrize("bad, error", [
    (np.zeros((2, 575)), ValueError),
    (np.zeros((2, 640)), ValueError),
    (np.zeros(()), ValueError),
    (np.zeros((2, 576), np.int32), TypeError),
    (np.zeros((2, 576), np.uint8), TypeError),
    (np.zeros((2, 576), E4M3), TypeError),
    (np.full((2, 576), np.nan), ValueError),
    (np.full((2, 576), np.inf), ValueError),
    (None, TypeError),
    ("rows", TypeError),
])
def test_quantizer_errors_name_rows(fn, bad, error):
    with pytest.raises(error, match="^rows: "):
        fn(bad)


def test_quantizer_specific_errors():
    with pytest.raises(ValueError, match="^rows: "):
        quantize_fp8_rope_aware(np.zeros((1, 512)))             # fp8 takes 512, the others do not
    with pytest.raises(ValueError, match="^rows: "):
        quantize_fp8_ds_mla(np.zeros((1, 512)))
    with pytest.raises(ValueError, match="^scale_rule: "):
        quantize_fp8_ds_mla(np.zeros((1, 576)), scale_rule="pow2")
    with pytest.raises(ValueError, match="^q: "):
        quantize_q_rope_aware(np.zeros((4, 576)))
    with pytest.raises(ValueError, match="^q: "):
        quantize_q_rope_aware(np.zeros((1, 4, 512)))
    with pytest.raises(TypeError, match="^q: "):
        quantize_q_rope_aware(np.zeros((1, 4, 576), np.int64))
    tiny_latent_huge_rope = np.zeros((1, 576))
    tiny_latent_huge_rope[0, 0], tiny_latent_huge_rope[0, 512] = 1e-30, 1e30   # k_r / σ overflows bf16
    with pytest.raises(ValueError, match="^rows: "):
        quantize_fp8_rope_aware(tiny_latent_huge_rope)


def test_dequantize_errors():
    rec, sigma = quantize_fp8_rope_aware(np.ones((2, 576)))
    with pytest.raises(ValueError, match="^scales: "):
        dequantize(rec, "fp8_rope_aware")
    with pytest.raises(ValueError, match="^scales: "):
        dequantize(rec, "fp8_rope_aware", sigma[:1])
    with pytest.raises(TypeError, match="^scales: "):
        dequantize(rec, "fp8_rope_aware", np.array(["a", "b"]))
    with pytest.raises(ValueError, match="^scales: "):
        dequantize(quantize_fp8(np.ones((2, 576))), "fp8", sigma)
    with pytest.raises(ValueError, match="^layout: "):
        dequantize(rec, "fp4", sigma)
    with pytest.raises(ValueError, match="^rows: "):
        dequantize(rec, "fp8_ds_mla")                           # 640-byte records are not ds_mla
    with pytest.raises(TypeError, match="^rows: "):
        dequantize(np.ones((2, 576), np.float32), "fp8")
    with pytest.raises(TypeError, match="^rows: "):
        dequantize(None, "fp8")


# --- fp8 case builders (mla_cupy.testing) -------------------------------------------------

CASE_KINDS = [
    ("fp8", {}), ("fp8", {"q_fp8": True}), ("fp8", {"extreme": True}), ("fp8", {"d_qk": 512}),
    ("fp8_rope_aware", {}), ("fp8_rope_aware", {"extreme": True, "value_scale": 3.7}),
    ("fp8_ds_mla", {}), ("fp8_ds_mla", {"extreme": True, "value_scale": 0.01}),
]
WIDTH = {"fp8": 576, "fp8_rope_aware": 640, "fp8_ds_mla": 656}


def build(layout, kw, sparse, seed=11):
    rng = np.random.default_rng(seed)
    if sparse:
        return make_sparse_case(rng, seq_lens=[1, 2, 0], cache_lens=[40, 300, 5], indices_stride=48,
                                page_size=16, extra_stride=9, extra_page_size=8, topk="random",
                                logical=True, num_layers=2, layer_idx=1, sink="random", layout=layout, **kw)
    return make_case(rng, seq_lens=[1, 3, 0, 2], cache_lens=[70, 5, 9, 0], page_size=16, num_layers=2,
                     layer_idx=1, mask="sliding_window_causal", window=40, sink="random", layout=layout, **kw)


def check_stream(case, blocks, scales, layout, d_qk):
    assert blocks.dtype == np.uint8
    assert blocks.shape[-1] == (d_qk if layout == "fp8" else WIDTH[layout])
    live = (blocks[..., 0] & 0x7F) != 0x7F
    assert live.any() and not live.all()
    assert np.all(blocks[~live] == NAN_BYTE)                       # unused slots: NaN bytes only
    assert not np.any((blocks[live][:, :512] & 0x7F) == 0x7F)      # no NaN in live rows
    if layout == "fp8_rope_aware":
        assert scales.dtype == np.float32 and scales.shape == blocks.shape[:-1]
        np.testing.assert_array_equal(np.isnan(scales), ~live)
    else:
        assert scales is None
    return live


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("layout, kw", CASE_KINDS, ids=[f"{l}-{'-'.join(k) or 'plain'}" for l, k in CASE_KINDS])
def test_fp8_cases_build_and_reference_runs(layout, kw, sparse):
    case = build(layout, kw, sparse)
    d_qk = kw.get("d_qk", 576)
    assert case.kv_layout == layout and f"layout={layout}" in case.describe()
    live = check_stream(case, case.blocks, case.scales, layout, d_qk)
    if sparse:
        check_stream(case, case.extra_blocks, case.extra_scales, layout, d_qk)
    # the same seed draws the same rows as the bf16 case: same live slots, same bf16 q
    plain = build("bf16", {k: v for k, v in kw.items() if k in ("d_qk", "value_scale")}, sparse)
    np.testing.assert_array_equal(live, ~np.isnan(plain.blocks[..., 0].astype(np.float32)))
    tokens, heads = plain.q.shape[:2]
    if layout == "fp8_rope_aware":
        assert case.q.dtype == np.uint8 and case.q.shape == (tokens, heads, 640)
        assert case.q_scale.shape == (tokens,) and case.fp8_kwargs()["per_token_scale_rope_aware"] is True
    elif kw.get("q_fp8"):
        assert case.q.dtype == np.uint8 and case.q.shape == (tokens, heads, d_qk)
        assert case.q_scale.dtype == np.float32 and np.all(np.frexp(case.q_scale)[0] != 0.5)
        assert set(case.fp8_kwargs()) == {"q_scale_ptr"}
    else:
        np.testing.assert_array_equal(case.q.view(np.uint16), plain.q.view(np.uint16))
        assert case.q_scale is None and case.fp8_kwargs() == {}
    coll = case.collection()
    assert coll.layout.value == layout and (coll.scales is None) == (layout != "fp8_rope_aware")
    out, lse = reference(case)
    assert out.shape == (tokens, heads, 512)
    assert not np.isnan(out).any() and not np.isnan(lse).any()
    assert np.isfinite(out).all() and np.all(np.isfinite(lse) | np.isneginf(lse))
    assert np.isfinite(lse).any()
    tol = tolerance_for(case)
    assert tol == tolerance(BF16, v_max(case)) and v_max(case) > 0
    # the reference rounded to bf16, as the kernel writes it, passes; twice the bound does not
    assert compare(out.astype(BF16).astype(np.float32), lse, out, lse, tol=tol).ok
    assert not compare(out + 2 * (tol.atol + tol.rtol * np.abs(out)), lse, out, lse, tol=tol).ok


@pytest.mark.parametrize("layout", FP8_LAYOUTS)
def test_extreme_rows_hold_448_and_subnormals(layout):
    case = make_case(np.random.default_rng(4), seq_lens=[2, 1], cache_lens=[30, 50], page_size=8,
                     layout=layout, extreme=True)
    latent = case.blocks[(case.blocks[..., 0] & 0x7F) != 0x7F][:, :512]
    present = set(np.unique(latent).tolist())
    assert {0x7E, 0xFE} <= present
    assert len(present & set(SUBNORMAL_BYTES.tolist())) >= 4
    if layout == "fp8":
        assert v_max(case) == 448.0
    if layout == "fp8_ds_mla":   # in an extreme row every non-zero group has both ±448
        rows = latent.reshape(-1, 4, 128)
        both = ((rows == 0x7E).any(-1) & (rows == 0xFE).any(-1)).all(-1)
        assert both.any()


def test_legacy_and_layout_keywords():
    rng = np.random.default_rng
    kw = dict(seq_lens=[1], cache_lens=[10], num_heads=2)
    assert make_case(rng(0), **kw).kv_layout == "bf16"
    legacy_fp16 = make_case(rng(0), dtype="float16", **kw)
    assert legacy_fp16.kv_layout == "fp16" and legacy_fp16.q.dtype == np.float16
    assert legacy_fp16.layout == "fp16" and legacy_fp16.scales is None and legacy_fp16.q_scale is None
    fp16 = make_case(rng(0), layout="fp16", **kw)
    np.testing.assert_array_equal(fp16.q, legacy_fp16.q)
    assert tolerance_for(fp16) == tolerance(np.float16, v_max(fp16))
    for bad in [dict(layout="fp16", dtype="bfloat16"), dict(layout="fp8", dtype="float16"),
                dict(layout="fp8_rope_aware", d_qk=512), dict(layout="fp8_ds_mla", q_fp8=True),
                dict(q_fp8=True), dict(extreme=True), dict(layout="int4")]:
        with pytest.raises(ValueError):
            make_case(rng(0), **kw, **bad)
        with pytest.raises(ValueError):
            make_sparse_case(rng(0), indices_stride=4, **kw, **bad)


def test_tolerance_from_output_dtype_and_data_scale():
    u_bf16, u_fp16 = 2.0**-8, 2.0**-11
    assert tolerance(BF16, 3.0) == Tolerance(atol=6 * u_bf16, rtol=2 * u_bf16, rel_rms=2 * u_bf16)
    assert tolerance("float16", 0.5) == Tolerance(atol=u_fp16, rtol=2 * u_fp16, rel_rms=2 * u_fp16)
    # the same convention for every layout: bf16 data and its fp8 encodings differ only by v_max
    rng = np.random.default_rng
    kw = dict(seq_lens=[1, 2], cache_lens=[30, 7], num_heads=2, page_size=8)
    for layout in ("bf16", *FP8_LAYOUTS):
        case = make_case(rng(3), layout=layout, **kw)
        assert tolerance_for(case) == tolerance(BF16, v_max(case))
        assert 2.0 < v_max(case) < 6.0     # max |N(0, 1)| over a few thousand values


def test_compare_per_element_tensor_and_lse_bounds():
    ref = np.ones((1, 1, 4))
    lse = np.zeros((1, 1))
    biased = ref + 0.03                 # bf16 at data scale 1: 2^-7 + 2^-7 * 1 = 0.0156 per element
    assert not compare(biased, lse, ref, lse, dtype=BF16).ok
    per_element_only = Tolerance(atol=0.04, rtol=0.0, rel_rms=1.0)
    assert compare(biased, lse, ref, lse, tol=per_element_only).ok
    assert not compare(biased, lse, ref, lse, tol=Tolerance(0.0, 0.0, 1.0)).ok
    # a bias every element allows, the tensor-level bound (||err|| / ||ref|| = 0.03) catches
    cmp = compare(biased, lse, ref, lse, tol=Tolerance(0.04, 0.0, rel_rms=0.02))
    assert not cmp.ok and cmp.rel_rms == pytest.approx(0.03) and "||out-ref||/||ref||" in cmp.message
    one_off = ref.copy()
    one_off[0, 0, 2] += 0.03            # the same error in one element of four: rel RMS 0.015
    assert compare(one_off, lse, ref, lse, tol=Tolerance(0.04, 0.0, rel_rms=0.02)).ok
    assert not compare(ref, lse + 0.01, ref, lse, tol=per_element_only).ok     # lse: 1e-3 * max(1, |lse|)
    zeros = np.zeros_like(ref)          # rows of nothing visible: exact zeros, or the tensor fails
    assert compare(zeros, lse, zeros, lse, dtype=BF16).ok
    assert not compare(zeros + 1e-6, lse, zeros, lse, dtype=BF16).ok
    with pytest.raises(ValueError, match="tol"):
        compare(ref, lse, ref, lse)
    with pytest.raises(TypeError, match="tol: expected a Tolerance"):
        compare(ref, lse, ref, lse, tol=(0.04, 0.0))
    with pytest.raises(ValueError, match="drop dtype"):
        compare(ref, lse, ref, lse, tol=per_element_only, v_scale=2.0)


def test_cases_carry_their_seed_and_scale():
    case = make_case(np.random.default_rng(1234), seq_lens=[1], cache_lens=[10], num_heads=2,
                     scale=-0.25)
    assert case.seed == 1234 and case.scale == -0.25
    assert "rng_seed=1234" in case.describe() and "scale=-0.25" in case.describe()
    again = make_case(np.random.default_rng(case.seed), seq_lens=[1], cache_lens=[10], num_heads=2)
    np.testing.assert_array_equal(again.q.view(np.uint16), case.q.view(np.uint16))
    assert again.scale == 576 ** -0.5
    child = np.random.default_rng(np.random.SeedSequence(5).spawn(1)[0])
    assert make_sparse_case(child, seq_lens=[1], cache_lens=[3], indices_stride=4).seed is None


def test_nan_filled_refuses_other_dtypes():
    with pytest.raises(ValueError, match="dtype: expected bfloat16, float16 or float32"):
        nan_filled((2, 3), np.int32)


def test_dequantization_slack_widens_by_the_rounding_measured_on_the_case():
    """An fp8_ds_mla result computed on bf16-rounded values (the Hopper kernels)
    fails the exact reference's plain bounds on a case built to show it, passes
    with the slack, and an error beyond the slack still fails."""
    rng = np.random.default_rng(11)
    case = make_case(rng, layout="fp8_ds_mla", seq_lens=[1, 2], cache_lens=[0, 40], num_heads=16,
                     page_size=16, mask="causal")
    exact, rounded = reference(case), reference(case, "bfloat16")
    tol = Tolerance(atol=0.0, rtol=0.0, rel_rms=0.0, lse_rtol=0.0)
    assert not compare(rounded[0], rounded[1], *exact, tol=tol).ok
    slack = dequantization_slack(*exact, *rounded)
    assert slack[1] > 0 and slack[0].max() > 0
    assert compare(rounded[0], rounded[1], *exact, tol=tol, slack=slack).ok
    assert not compare(rounded[0], rounded[1] + 2 * slack[1], *exact, tol=tol, slack=slack).ok
    off = rounded[0].copy()
    off[0, 0, 0] += 2 * slack[0][0, 0, 0] + 1e-6
    assert not compare(off, rounded[1], *exact, tol=tol, slack=slack).ok
