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
from hypothesis import HealthCheck, given, settings
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
