"""Hypothesis strategies: one draw -> one hostile dense case (mla_cupy.testing.Case)."""
from __future__ import annotations

import numpy as np
from hypothesis import strategies as st

from mla_cupy.testing import make_case, make_sparse_case


@st.composite
def dense_cases(draw, dtypes=("bfloat16", "float16"), max_batch=6, max_cache=700):
    batch = draw(st.integers(1, max_batch))
    page_size = draw(st.sampled_from([1, 3, 16, 32, 64, 128]))
    seq_lens = draw(st.lists(st.integers(0, 5), min_size=batch, max_size=batch))
    # lengths on page boundaries and 0 come up often on purpose
    length = st.one_of(st.integers(0, max_cache), st.sampled_from([0, page_size - 1, page_size,
                                                                    page_size + 1, 2 * page_size]))
    cache_lens = draw(st.lists(length, min_size=batch, max_size=batch))
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
                     num_partitions=num_partitions)


@st.composite
def sparse_cases(draw, dtypes=("bfloat16", "float16"), max_batch=4):
    batch = draw(st.integers(1, max_batch))
    seq_lens = draw(st.lists(st.integers(0, 4), min_size=batch, max_size=batch))
    cache_lens = draw(st.lists(st.sampled_from([0, 1, 5, 63, 64, 65, 300, 3000]),
                               min_size=batch, max_size=batch))
    extra_stride = draw(st.sampled_from([0, 0, 1, 17, 64, 100]))
    seed = draw(st.integers(0, 2**32 - 1))
    return make_sparse_case(
        np.random.default_rng(seed), seq_lens=seq_lens, cache_lens=cache_lens,
        indices_stride=draw(st.sampled_from([1, 63, 64, 65, 200, 2048])),
        num_heads=draw(st.sampled_from([1, 8, 16, 20, 64, 128])),
        page_size=draw(st.sampled_from([1, 16, 64])),
        d_qk=draw(st.sampled_from([576, 576, 512])), dtype=draw(st.sampled_from(dtypes)),
        mask=draw(st.sampled_from(["null", "causal"])),
        sink=draw(st.sampled_from([None, "random"])),
        num_layers=(nl := draw(st.integers(1, 2))), layer_idx=draw(st.integers(0, nl - 1)),
        num_partitions=draw(st.sampled_from([None, 1, 2, 7, 64])),
        fold=draw(st.booleans()), topk=draw(st.sampled_from(["none", "random"])),
        logical=draw(st.booleans()), extra_stride=extra_stride,
        extra_page_size=draw(st.sampled_from([1, 32, 64])),
        extra_topk=draw(st.sampled_from(["none", "random"])),
        valid_fraction=draw(st.sampled_from([0.0, 0.5, 0.9, 1.0])))
