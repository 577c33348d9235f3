"""Fuzzing the argument checks of generic_flare_mla_decode_kv_cache_ragged (CPU).

Hypothesis starts from valid calls (dense bf16, sparse with an extra stream,
rope-aware fp8) and replaces one to three arguments with garbage: None, wrong
Python types, host NumPy arrays, metadata-only device arrays of a random shape,
dtype or layout, near misses of the right array.  Whatever it draws, the call
may only pass validation (and reach the launch, which the fixture stops) or
raise TypeError / ValueError whose message starts with the name of an argument
(docs/spec.md §9).  Any other exception (AttributeError, IndexError,
ZeroDivisionError, OverflowError, ...) is a validation hole.
"""
from __future__ import annotations

import inspect

import numpy as np
import pytest
from hypothesis import HealthCheck, assume, given, settings
from hypothesis import strategies as st

from mla_cupy.dispatch import generic_flare_mla_decode_kv_cache_ragged
from test_errors import (B, BF16, H, NUM_BLOCKS, PAGE, T, PastValidation, baseline, call, fake,
                         make_kv, past_validation, scalar_args)  # noqa: F401 (fixture)

ARGUMENTS = [n for n in inspect.signature(generic_flare_mla_decode_kv_cache_ragged).parameters]
DTYPES = [BF16, np.float16, np.float32, np.int32, np.uint32, np.int64, np.uint8, np.bool_]


def sparse_baseline() -> dict:
    return baseline() | dict(
        sparse_mla=True, d_indices=fake([T, 8], np.int32), topk_lengths=fake([B], np.int32),
        extra_k=make_kv(page_size=1, blocks=fake([5, 1, 1, 576], BF16)),
        extra_d_indices=fake([T, 4], np.int32), extra_indices_stride=4,
        extra_topk_lengths=fake([B], np.int32))


def rope_aware_baseline() -> dict:
    return baseline() | dict(
        kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                              scales=fake([NUM_BLOCKS, 1, PAGE], np.float32)),
        q=fake([T, H, 640], np.uint8), per_token_scale_rope_aware=True,
        q_scale_ptr=fake([T], np.float32))


BASELINES = [baseline, sparse_baseline, rope_aware_baseline]

shapes = st.lists(st.integers(0, 700), min_size=0, max_size=5)
device_arrays = st.builds(lambda s, d, c: fake(s, d, contiguous=c), shapes, st.sampled_from(DTYPES),
                          st.booleans())
garbage = st.one_of(
    st.none(), st.booleans(), st.integers(-2**63, 2**63), st.floats(allow_nan=True),
    st.text(max_size=8), st.just(object()), st.just(b"\x00"), st.just([1, 2]),
    st.builds(lambda s: np.zeros([min(x, 4) for x in s], np.float32), shapes),   # host array
    device_arrays)


def near_miss(value):
    """Arrays of the right kind, one property off."""
    if not hasattr(value, "__cuda_array_interface__"):
        return garbage
    s, d = list(value.shape), value.dtype
    return st.one_of(
        st.sampled_from(DTYPES).map(lambda dt: fake(s, dt)),
        st.just(fake(s, d, contiguous=False)),
        st.just(fake(s + [1], d)), st.just(fake(s[:-1], d)),
        st.integers(0, max(0, len(s) - 1)).flatmap(
            lambda i: st.integers(0, 1000).map(lambda n: fake(s[:i] + [n] + s[i + 1:], d))))


@st.composite
def mutated_calls(draw):
    args = draw(st.sampled_from(BASELINES))()
    names = draw(st.lists(st.sampled_from(ARGUMENTS), min_size=1, max_size=3, unique=True))
    for name in names:
        old = args.get(name)
        args[name] = draw(st.one_of(garbage, near_miss(old)) if old is not None else garbage)
    return names, args


def names_an_argument(msg: str) -> bool:
    head = msg.split(":", 1)[0]
    return any(a in head for a in ARGUMENTS + ["kv_collection", "scalar_args_buf", "backend"])


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated_calls())
def test_garbage_arguments_pass_or_raise_a_documented_error(past_validation, drawn):
    names, args = drawn
    try:
        call(args)
    except PastValidation:
        return                      # accepted: the launch would have followed
    except (TypeError, ValueError) as e:
        msg = str(e)
        assert msg and names_an_argument(msg), f"mutated {names}: unclear message {msg!r}"
    except Exception as e:          # noqa: BLE001 - the property under test
        pytest.fail(f"mutated {names}: {type(e).__name__}: {e}")


# ------------------------------------------------------------------ mla_decode

MLA_DECODE_ARGUMENTS = ["q", "kv_collection", "input_row_offsets", "layer_idx", "scale", "mask",
                        "window", "attn_sink", "num_partitions", "return_lse", "out", "lse",
                        "q_max_seq_len", "backend", "sparse_mla", "d_indices"]


def mla_decode_baseline() -> dict:
    """A valid mla_decode call that allocates nothing: out and lse given,
    q_max_seq_len given (no device-to-host read)."""
    return dict(q=fake([T, H, 576], BF16), kv_collection=make_kv(),
                input_row_offsets=fake([B + 1], np.uint32), out=fake([T, H, 512], BF16),
                lse=fake([T, H], np.float32), return_lse=True, q_max_seq_len=2)


@pytest.fixture
def fake_packing(monkeypatch):
    """shared_scalar_args uploads a buffer (needs a GPU): keep its checks, fake the upload."""
    from mla_cupy import dispatch, scalar_args as sa_module

    def pack(batch_size, q_max_seq_len, max_cache_length, num_heads, *, num_partitions=None, **kw):
        for name, v in (("batch_size", batch_size), ("q_max_seq_len", q_max_seq_len)):
            if isinstance(v, bool) or not isinstance(v, (int, np.integer)) or v < 0:
                raise ValueError(f"{name}: expected an int >= 0, got {v!r}")
        if num_partitions is not None:
            sa_module.check_num_partitions(num_partitions)
        return scalar_args(batch_size=batch_size, q_max_seq_len=q_max_seq_len,
                           num_partitions=num_partitions or 1)
    monkeypatch.setattr(dispatch, "shared_scalar_args", pack)


@st.composite
def mutated_mla_decode_calls(draw):
    args = mla_decode_baseline()
    names = draw(st.lists(st.sampled_from(MLA_DECODE_ARGUMENTS), min_size=1, max_size=3, unique=True))
    for name in names:
        old = args.get(name)
        args[name] = draw(st.one_of(garbage, near_miss(old)) if old is not None else garbage)
    return names, args


@settings(max_examples=400, deadline=None, suppress_health_check=[HealthCheck.function_scoped_fixture])
@given(mutated_mla_decode_calls())
def test_mla_decode_garbage_passes_or_raises_a_documented_error(past_validation, fake_packing, drawn):
    from mla_cupy.dispatch import mla_decode
    names, args = drawn
    # None here means "allocate" or "read the offsets back": the GPU paths, not validation.
    assume(args.get("out") is not None and args.get("q_max_seq_len") is not None)
    rl = args.get("return_lse")
    assume(args.get("lse") is not None
           or not (isinstance(rl, (bool, int, np.integer, np.bool_)) and rl == 1))
    q, kv, offsets = args.pop("q"), args.pop("kv_collection"), args.pop("input_row_offsets")
    try:
        mla_decode(q, kv, offsets, **args)
    except PastValidation:
        return
    except (TypeError, ValueError) as e:
        msg = str(e)
        known = ARGUMENTS + MLA_DECODE_ARGUMENTS + ["kv_collection", "scalar_args_buf", "batch_size"]
        assert msg and any(a in msg.split(":", 1)[0] for a in known), \
            f"mutated {names}: unclear message {msg!r}"
    except Exception as e:          # noqa: BLE001 - the property under test
        pytest.fail(f"mutated {names}: {type(e).__name__}: {e}")
