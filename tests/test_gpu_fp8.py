"""fp8 caches on the GPU against the NumPy reference (marker ``gpu``).

Layouts: ``fp8`` (576/512 e4m3 bytes; q bf16, or e4m3 with per-token
q_scale), ``fp8_rope_aware`` (640-byte rows, per-token sigma in scales,
640-byte q with sigma_Q), ``fp8_ds_mla`` (FlashMLA's DeepSeek-V3.2 656-byte
record).  The reference dequantises exactly as docs/spec.md §4 says; the portable
kernels dequantise to fp16 in shared memory (exact for e4m3 and, within fp16's
range, bf16 rope values), apply per-token and per-group scales in fp32 on the
scores and on P, and write bf16; on sm_90, ``fp8`` and ``fp8_ds_mla`` with bf16
queries run the Hopper kernels: the ring dequantises to bf16 (exact for e4m3; the
group scales rounded in) and rounds P to bf16, the narrow kernel decodes ``fp8`` rows
and, at 16 rows, ``fp8_ds_mla`` records as the portable kernels do (docs/spec.md
sections 3 and 4).  The tolerance is bf16's for the data's largest |V|, as for
every layout (tolerance_for).
"""
from __future__ import annotations

import dataclasses

import numpy as np
import pytest
from hypothesis import given
from hypothesis import strategies as st

from mla_cupy import records
from mla_cupy.testing import (assert_schedule_ran, check_against_reference, compare, make_case,
                              make_sparse_case, nan_filled, reference, to_torch, tolerance_for,
                              two_level_ds_mla_case)
from strategies import batch_shape, softmax_scale, sparse_batch_shape

pytestmark = pytest.mark.gpu

LAYOUTS = ["fp8", "fp8_rope_aware", "fp8_ds_mla"]


def _check(case, **kw):
    return check_against_reference(case, **kw)[:2]


@st.composite
def fp8_dense(draw):
    layout = draw(st.sampled_from(LAYOUTS))
    page = draw(st.sampled_from([1, 3, 16, 64]))
    seq_lens, cache_lens = draw(batch_shape(max_batch=4, max_seq=4, max_cache=600, page_size=page))
    mask = draw(st.sampled_from(["null", "causal", "sliding_window_causal"]))
    d_qk = 576 if layout != "fp8" else draw(st.sampled_from([576, 512]))
    return make_case(
        np.random.default_rng(draw(st.integers(0, 2**32 - 1))),
        seq_lens=seq_lens, cache_lens=cache_lens,
        num_heads=draw(st.sampled_from([1, 16, 20, 64, 128])), page_size=page, layout=layout,
        d_qk=d_qk, scale=softmax_scale(draw, d_qk),
        q_fp8=layout == "fp8" and draw(st.booleans()), mask=mask,
        window=draw(st.integers(1, 200)) if mask == "sliding_window_causal" else -1,
        sink=draw(st.sampled_from([None, "random"])),
        num_partitions=draw(st.sampled_from([None, 1, 3, 16])),
        value_scale=draw(st.sampled_from([1.0, 0.37, 3.0])), extreme=draw(st.booleans()))


@st.composite
def fp8_sparse(draw):
    layout = draw(st.sampled_from(LAYOUTS))
    seq_lens, cache_lens, stride = draw(sparse_batch_shape(
        max_batch=3, max_seq=3, strides=[1, 64, 65, 300], cache_lens=[0, 5, 64, 300, 3000]))
    return make_sparse_case(
        np.random.default_rng(draw(st.integers(0, 2**32 - 1))),
        seq_lens=seq_lens, cache_lens=cache_lens, indices_stride=stride, layout=layout, num_heads=draw(st.sampled_from([1, 16, 64, 128])),
        page_size=draw(st.sampled_from([1, 3, 7, 64])), scale=softmax_scale(draw, 576),
        mask=draw(st.sampled_from(["null", "causal"])), sink=draw(st.sampled_from([None, "random"])),
        fold=draw(st.booleans()), topk=draw(st.sampled_from(["none", "random"])),
        logical=draw(st.booleans()), extra_stride=draw(st.sampled_from([0, 9, 64])),
        extra_page_size=draw(st.sampled_from([1, 17, 32])),
        num_partitions=draw(st.sampled_from([None, 1, 4])),
        valid_fraction=draw(st.sampled_from([0.5, 0.9, 1.0])))


@given(fp8_dense())
def test_dense_matches_reference(compiled_kernels, case):
    _check(case)


@given(fp8_sparse())
def test_sparse_matches_reference(compiled_kernels, case):
    _check(case)


@pytest.mark.parametrize("layout", LAYOUTS)
def test_extremes_and_scales_not_powers_of_two(compiled_kernels, rng, layout):
    case = make_case(rng, seq_lens=[1, 3], cache_lens=[257, 1000], num_heads=16, layout=layout,
                     value_scale=0.731, extreme=True, sink="random")
    for p in (1, 5):
        _check(case, num_partitions=p)


@pytest.mark.parametrize("num_heads", [16, 32])
def test_every_score_far_below_zero(compiled_kernels, rng, num_heads):
    """fp8_ds_mla (its bf16 rope holds the offset column) in the narrow kernel's 16- and
    32-row forms, every score near -120: a row's first running max below -128 in log2
    units (tests/test_gpu_dense.py's test of the same name)."""
    from mla_cupy import dispatch
    case = make_case(rng, seq_lens=[1, 1, 1], cache_lens=[700, 129, 64], num_heads=num_heads,
                     layout="fp8_ds_mla", mask="causal", key_offsets=lambda j: -120.0)
    for p in (1, 3):
        dispatch._eager_plans.clear()
        _check(case, num_partitions=p)
        assert_schedule_ran(dispatch._eager_plans.values(), f"_m{num_heads}_hopper_narrow", case.describe())


def test_fp8_ds_mla_group_scales_near_the_narrow_kernels_limit(compiled_kernels, rng, monkeypatch):
    """fp8_ds_mla group scales up to the bound of docs/spec.md section 4: at 16 rows the
    narrow kernel writes P x scale in fp16 and P reaches 2^8 under the running max's slack,
    so a scale must stay at or below 65504 / 2^8 = 255.875.  At the bound, with weights of
    2^7.9 (two_level_ds_mla_case), and at random scales in [128, 255.875] over random
    records; an overflow would show as inf or NaN against the reference (at a scale of 4096
    this construction does overflow: tools/results/NOTES.md session 29)."""
    from mla_cupy import dispatch
    monkeypatch.setattr(dispatch, "_eager_plans", {})
    _check(two_level_ds_mla_case(rng, 255.875), num_partitions=1)
    # one token a sequence: every row group is 16 rows, the narrow m16 tile the bound is about
    # (s_q = 2 gives 32 rows, whose tile decodes c' x g to bf16 and has no such bound)
    case = make_case(rng, seq_lens=[1, 1], cache_lens=[700, 1500], num_heads=16, layout="fp8_ds_mla",
                     sink="random", scale=1e-5)
    blocks = case.blocks.copy()
    at = records.scales_at("fp8_ds_mla")
    scales = blocks[..., at:at + records.SCALE_BYTES * records.NUM_GROUPS].view(np.float32)
    live = (blocks[..., 0] & 0x7F) != 0x7F
    scales[live] = np.minimum(rng.uniform(128.0, 256.0, size=scales.shape), 255.875).astype(np.float32)[live]
    case = dataclasses.replace(case, blocks=blocks)
    for p in (1, 3):
        _check(case, num_partitions=p)
    assert_schedule_ran(dispatch._eager_plans.values(), "_m16_hopper_narrow", case.describe())


@pytest.mark.parametrize("sparse", [False, True], ids=["dense", "sparse"])
@pytest.mark.parametrize("backend", ["hopper", "portable"])
def test_fp8_bf16_queries_with_q_scale(compiled_kernels, rng, monkeypatch, backend, sparse):
    """``fp8`` rows with bf16 queries and a per-token sigma_Q (q_scale_ptr multiplies
    the queries whatever their dtype, docs/spec.md section 4), on each kernel family:
    64 and 128 heads, and 16 and 32 (the narrow kernel's row groups), D_qk 576 and
    512, masked rows, several splits."""
    monkeypatch.setenv("MLA_CUPY_BACKEND", backend)
    for num_heads, d_qk in ((128, 576), (64, 512), (16, 576), (32, 512)):
        if sparse and d_qk == 512:
            continue
        if sparse:
            case = make_sparse_case(rng, seq_lens=[2, 1, 3], cache_lens=[300, 0, 2100], indices_stride=65,
                                    layout="fp8", num_heads=num_heads, page_size=16, topk="random",
                                    sink="random", valid_fraction=0.7)
        else:
            case = make_case(rng, seq_lens=[2, 1, 3], cache_lens=[300, 0, 2100], num_heads=num_heads,
                             layout="fp8", d_qk=d_qk, page_size=16, sink="random")
        assert case.q_scale is None and case.q.dtype != np.uint8   # bf16 queries
        case = dataclasses.replace(case, q_scale=rng.uniform(0.25, 4.0, case.q.shape[0]).astype(np.float32))
        for p in (1, 4):
            _check(case, num_partitions=p)


def test_torch_float8_tensors_in(compiled_kernels, rng):
    torch = pytest.importorskip("torch")
    if not hasattr(torch, "float8_e4m3fn"):
        pytest.skip("torch without float8_e4m3fn")
    from mla_cupy import PagedKVCollection, mla_decode

    case = make_case(rng, seq_lens=[1, 2], cache_lens=[100, 300], num_heads=16, layout="fp8",
                     q_fp8=True)

    t = to_torch
    blocks = t(case.blocks).view(torch.float8_e4m3fn)
    q = t(case.q).view(torch.float8_e4m3fn)
    kv = PagedKVCollection(blocks, t(case.lookup_table), t(case.cache_lengths), case.page_size)
    out = nan_filled((3, 16, 512), case.out_dtype, like=q)
    lse = nan_filled((3, 16), np.float32, like=q)
    mla_decode(q, kv, t(case.input_row_offsets), scale=case.scale, q_scale_ptr=t(case.q_scale),
               out=out, lse=lse)
    torch.cuda.synchronize()
    ref_out, ref_lse = reference(case)
    cmp = compare(out.float().cpu().numpy(), lse.cpu().numpy(), ref_out, ref_lse, tol=tolerance_for(case))
    assert cmp.ok, f"{case.describe()}: {cmp.message}"


def test_extra_scales_ptr_equals_extra_k_scales(compiled_kernels, rng):
    """The rope-aware extra stream's sigma given as extra_scales_ptr (extra_k without
    scales) gives bit-identical results to extra_k.scales, and matches the reference."""
    import cupy
    from mla_cupy import PagedKVCollection, mla_decode

    case = make_sparse_case(rng, seq_lens=[2, 1], cache_lens=[300, 50], indices_stride=128,
                            num_heads=16, layout="fp8_rope_aware", extra_stride=20,
                            extra_page_size=8, sink="random")
    out, lse, _, _ = check_against_reference(case)
    kw = case.sparse_kwargs(cupy)
    ek = kw["extra_k"]
    kw["extra_k"] = PagedKVCollection(ek.blocks, ek.lookup_table, ek.cache_lengths, ek.page_size,
                                      max_cache_length=0)
    kw["extra_scales_ptr"] = cupy.asarray(case.extra_scales)
    out2, lse2 = nan_filled(out.shape, case.out_dtype), nan_filled(lse.shape, np.float32)
    mla_decode(cupy.asarray(case.q), case.collection(cupy), cupy.asarray(case.input_row_offsets),
               scale=case.scale, attn_sink=cupy.asarray(case.attn_sink), out=out2, lse=lse2,
               q_max_seq_len=case.q_max_seq_len, **case.fp8_kwargs(cupy), **kw)
    assert np.array_equal(out2.get().astype(np.float32), out) and np.array_equal(lse2.get(), lse), \
        case.describe()
