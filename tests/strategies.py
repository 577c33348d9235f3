"""Hypothesis strategies: one draw -> one hostile case (mla_cupy.testing.Case).

Every draw picks its own generator seed, so a case replays from its description
(``Case.describe`` prints ``rng_seed``) as well as from Hypothesis's database.
"""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from mla_cupy.testing import make_case, make_sparse_case

# Every fourth draw has up to LARGE_BATCH sequences; the reference's work,
# sum over sequences of tokens x keys, stays that of a small batch because the
# cache lengths shrink with the batch.
LARGE_BATCH = 64

# Multiples of d_qk ** -0.5: the usual one, a sharper and a flatter softmax, a
# uniform one (0: every visible key weighs the same) and a negative one.
SCALE_FACTORS = (1.0, 1.0, 3.0, 0.3, 0.0, -1.0)

# Shifts of the scores from one 64-key tile to the next, in log2 units, around the
# Hopper kernels' MAX_SLACK (8, kernels/hopper/wgmma.cuh.j2: the running max moves
# only when a tile passes it by more): falls, steps kept behind, steps just under
# and just past it, jumps far past it.
SCORE_STEPS_LOG2 = (-20.0, -6.0, 0.0, 3.0, 7.9, 8.1, 12.0, 20.0)


def batch_sizes(max_batch):
    """1 .. max_batch, or in a quarter of the draws max_batch + 1 .. LARGE_BATCH."""
    return st.integers(0, 3).flatmap(
        lambda k: st.integers(max_batch + 1, LARGE_BATCH) if k == 0 else st.integers(1, max_batch))


@st.composite
def batch_shape(draw, *, max_batch, max_seq, max_cache, page_size=None):
    """``(seq_lens, cache_lens)``: :func:`batch_sizes` sequences of at most ``max_seq``
    new tokens and ``max_cache * max_batch / batch`` cached ones (the keys in all stay
    about those of a small batch).  With ``page_size``, lengths on page boundaries and 0
    come up often."""
    batch = draw(batch_sizes(max_batch))
    cap = max(1, max_cache * max_batch // batch)
    length = st.integers(0, cap)
    if page_size is not None:
        edges = [n for n in (0, page_size - 1, page_size, page_size + 1, 2 * page_size) if n <= cap]
        length = st.one_of(length, st.sampled_from(edges))
    seq_lens = draw(st.lists(st.integers(0, max_seq), min_size=batch, max_size=batch))
    cache_lens = draw(st.lists(length, min_size=batch, max_size=batch))
    return seq_lens, cache_lens


@st.composite
def sparse_batch_shape(draw, *, max_batch, max_seq, strides, cache_lens=(0, 1, 5, 63, 64, 65, 300, 3000)):
    """``(seq_lens, cache_lens, indices_stride)`` for a sparse case: :func:`batch_sizes`
    sequences; a large batch has as many index rows as tokens, so its rows are short
    (strides up to 65) to keep the reference's work (tokens x slots) bounded."""
    batch = draw(batch_sizes(max_batch))
    seq_lens = draw(st.lists(st.integers(0, max_seq), min_size=batch, max_size=batch))
    cache = draw(st.lists(st.sampled_from(cache_lens), min_size=batch, max_size=batch))
    stride = draw(st.sampled_from([k for k in strides if k <= 65] if batch > max_batch else strides))
    return seq_lens, cache, stride


def softmax_scale(draw, d_qk: int) -> float:
    return draw(st.sampled_from(SCALE_FACTORS)) * d_qk ** -0.5


@st.composite
def dense_cases(draw, dtypes=("bfloat16", "float16"), max_batch=6, max_cache=700):
    page_size = draw(st.sampled_from([1, 3, 16, 32, 64, 128]))
    seq_lens, cache_lens = draw(batch_shape(max_batch=max_batch, max_seq=5, max_cache=max_cache,
                                            page_size=page_size))
    num_heads = draw(st.sampled_from([1, 2, 3, 8, 16, 20, 32, 64, 100, 128]))
    mask = draw(st.sampled_from(["null", "causal", "sliding_window_causal"]))
    window = draw(st.integers(1, 300)) if mask == "sliding_window_causal" else -1
    sink = draw(st.sampled_from([None, "random"]))
    num_layers = draw(st.integers(1, 3))
    layer_idx = draw(st.integers(0, num_layers - 1))
    num_partitions = draw(st.sampled_from([None, 1, 2, 3, 8, 64]))
    d_qk = draw(st.sampled_from([576, 576, 512]))
    dtype = draw(st.sampled_from(dtypes))
    seed = draw(st.integers(0, 2**32 - 1))
    return make_case(np.random.default_rng(seed), seq_lens=seq_lens, cache_lens=cache_lens,
                     num_heads=num_heads, page_size=page_size, d_qk=d_qk, dtype=dtype, mask=mask,
                     window=window, sink=sink, num_layers=num_layers, layer_idx=layer_idx,
                     num_partitions=num_partitions, scale=softmax_scale(draw, d_qk))


@st.composite
def sparse_cases(draw, dtypes=("bfloat16", "float16"), max_batch=4):
    seq_lens, cache_lens, stride = draw(sparse_batch_shape(
        max_batch=max_batch, max_seq=4, strides=[1, 17, 63, 64, 65, 200, 2048]))
    extra_stride = draw(st.sampled_from([0, 0, 1, 17, 64, 100]))
    d_qk = draw(st.sampled_from([576, 576, 512]))
    seed = draw(st.integers(0, 2**32 - 1))
    return make_sparse_case(
        np.random.default_rng(seed), seq_lens=seq_lens, cache_lens=cache_lens,
        indices_stride=stride,
        num_heads=draw(st.sampled_from([1, 8, 16, 20, 64, 128])),
        page_size=draw(st.sampled_from([1, 3, 7, 17, 64, 128])),
        d_qk=d_qk, dtype=draw(st.sampled_from(dtypes)),
        mask=draw(st.sampled_from(["null", "causal"])),
        sink=draw(st.sampled_from([None, "random"])),
        num_layers=(nl := draw(st.integers(1, 2))), layer_idx=draw(st.integers(0, nl - 1)),
        num_partitions=draw(st.sampled_from([None, 1, 2, 7, 64])),
        fold=draw(st.booleans()), topk=draw(st.sampled_from(["none", "random"])),
        logical=draw(st.booleans()), extra_stride=extra_stride,
        extra_page_size=draw(st.sampled_from([1, 3, 17, 32, 64])),
        extra_topk=draw(st.sampled_from(["none", "random"])),
        valid_fraction=draw(st.sampled_from([0.0, 0.5, 0.9, 1.0])),
        scale=softmax_scale(draw, d_qk))
