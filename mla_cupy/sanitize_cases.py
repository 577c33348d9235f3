"""Adversarial cases for the sanitizer runs (tools/sanitize_all.py, which runs
tools/sanitize_cases.py under compute-sanitizer, and tools/memcheck_sparse.py),
built once here (NumPy only; the GPU work is the tools').

Every case is hostile in the ways docs/spec.md §11 allows: sparse indices -1,
-2^31, 2^31-1, num_blocks*page_size and beyond; topk lengths negative and past
the stride; 2^31-1 sentinels in table entries no visible key needs; and NaN,
+inf, -inf in every row the decode must not read (testing.poison_unread).
"""
from __future__ import annotations

import dataclasses

import numpy as np

from .testing import Case, make_case, make_sparse_case, poison_unread
from .variants import DecodeKey, Sparsity, all_variants, hopper_supports

HEADS_BY_TILE = {16: 16, 32: 20, 64: 128}   # heads whose rows pick each portable tile (one token each)


@dataclasses.dataclass
class Item:
    """One sanitizer run: a case, the keywords of mla_decode, the family it stands for."""

    family: str
    case: Case
    decode_kwargs: dict


def memcheck_cases(rng: np.random.Generator) -> list[Case]:
    """The cases of tools/memcheck_sparse.py (sparse with every garbage index, dense
    sliding window, qfp8, and cases that run the Hopper kernels on sm_90: dense and
    sparse fp8 / fp8_ds_mla (the producer warpgroup), 128 heads (the dense 16-bit seesaw),
    16 heads at s_q 1 (the narrow kernel, its window's unaligned first tile), 128 heads at
    s_q 1 (the seesaw's `_segments` twin where the dispatcher chooses the split under
    MLA_CUPY_SPLIT=segments, as tools/memcheck_sparse.py runs it))."""
    cases = []
    for fold in (False, True):
        for extra in (0, 7, 65):
            cases.append(make_sparse_case(rng, seq_lens=[3, 0, 2, 1], cache_lens=[0, 5, 300, 64],
                                          indices_stride=130, num_heads=20, fold=fold, topk="random",
                                          logical=fold, extra_stride=extra, extra_page_size=3,
                                          extra_topk="random", valid_fraction=0.5, sink="random"))
    for layout in ("fp8_ds_mla", "fp8_rope_aware"):
        cases.append(make_sparse_case(rng, seq_lens=[2, 0, 1], cache_lens=[9, 5, 300], layout=layout,
                                      indices_stride=70, num_heads=16, fold=True, topk="random",
                                      extra_stride=9, extra_page_size=3, valid_fraction=0.5))
    # 128 heads unfolded: on sm_90 the pair schedule (a cluster of two CTAs a token)
    cases.append(make_sparse_case(rng, seq_lens=[2, 0, 1], cache_lens=[9, 5, 300], layout="fp8_ds_mla",
                                  indices_stride=70, num_heads=128, fold=False, topk="random",
                                  extra_stride=9, extra_page_size=3, valid_fraction=0.5))
    # dense fp8_ds_mla and fp8 (bf16 queries): on sm_90 the ring with the producer warpgroup
    cases.append(make_case(rng, seq_lens=[1, 3, 0], cache_lens=[700, 33, 5], num_heads=64, page_size=64,
                           layout="fp8_ds_mla", mask="causal"))
    cases.append(make_case(rng, seq_lens=[2, 0, 1], cache_lens=[90, 4, 301], num_heads=20, page_size=3,
                           layout="fp8", d_qk=512, mask="causal"))
    cases.append(make_sparse_case(rng, seq_lens=[2, 0, 1], cache_lens=[9, 5, 300], layout="fp8",
                                  indices_stride=70, num_heads=64, fold=False, topk="random",
                                  extra_stride=9, extra_page_size=3, valid_fraction=0.5))
    cases.append(make_case(rng, seq_lens=[1, 4, 0], cache_lens=[0, 129, 70], num_heads=16,
                           page_size=16, mask="sliding_window_causal", window=40))
    cases.append(make_case(rng, seq_lens=[2, 1], cache_lens=[100, 7], num_heads=20, page_size=3,
                           layout="fp8", q_fp8=True))
    cases.append(make_case(rng, seq_lens=[2, 0, 3], cache_lens=[300, 4, 0], num_heads=128,
                           page_size=1, mask="null", sink="random"))
    cases.append(make_case(rng, seq_lens=[1, 2], cache_lens=[700, 33], num_heads=20, page_size=64,
                           d_qk=512, dtype=np.float16, mask="causal"))
    cases.append(make_case(rng, seq_lens=[1, 1, 0, 1], cache_lens=[700, 33, 5, 2000], num_heads=16, page_size=64,
                           mask="sliding_window_causal", window=100, sink="random"))
    # 128 heads at s_q 1, the split the dispatcher's under MLA_CUPY_SPLIT=segments: the
    # seesaw's `_segments` twin (one cluster a share; on two SMs one share runs every segment)
    cases.append(make_case(rng, seq_lens=[1, 1, 0, 1, 1], cache_lens=[700, 33, 5, 2000, 64], num_heads=128,
                           page_size=16, mask="causal", sink="random"))
    return cases


def family_items(rng: np.random.Generator, *, quick: bool = False, hopper: bool = False) -> list[Item]:
    """One small poisoned case per variant family (the decode variants of
    variants.all_variants but for tile and backend: layout x mask x dense/sparse x
    fold x D_qk x e4m3 queries), sparse ones with and without an extra stream in
    turn, the three portable tiles in turn; each with ``backend="portable"`` and,
    where the Hopper family applies and ``hopper`` (an sm_90 device), with
    ``backend="hopper"``.  ``quick``: six families that
    between them reach every kernel family (portable dense and sparse, fp8
    records, the combine, Hopper)."""
    specs = []
    for key in all_variants():   # the families: every decode axis but the tile and the backend
        if isinstance(key, DecodeKey):
            spec = dict(sparse=key.sparsity is Sparsity.SPARSE, layout=key.layout.value, mask=key.mask.value)
            if spec["sparse"]:
                spec["fold"] = key.fold
            spec.update({k: v for k, v in (("d_qk", key.d_qk), ("q_fp8", key.q_fp8))
                         if v != getattr(DecodeKey, k)})
            if spec not in specs:
                specs.append(spec)
    if quick:
        wanted = [dict(sparse=False, layout="bf16", mask="causal"),
                  dict(sparse=False, layout="fp8_ds_mla", mask="sliding_window_causal"),
                  dict(sparse=True, layout="bf16", mask="causal", fold=True),
                  dict(sparse=True, layout="fp8_rope_aware", mask="null", fold=False),
                  dict(sparse=False, layout="fp16", mask="causal", d_qk=512),
                  dict(sparse=True, layout="fp8", mask="causal", fold=False)]
        specs = [s for s in specs if s in wanted]
    items = []
    for n, spec in enumerate(specs):
        tile = sorted(HEADS_BY_TILE)[n % len(HEADS_BY_TILE)]
        case = _family_case(rng, spec, HEADS_BY_TILE[tile], extra=9 if n % 2 else 0,
                            seq_lens=[2, 0, 1, 3] if tile == 64 else [1, 0, 1, 1])
        name = (f"{'sparse' if spec['sparse'] else 'dense'}_{spec['layout']}_{spec['mask']}"
                + (f"_fold{int(spec['fold'])}" if "fold" in spec else "")
                + ("_qk512" if spec.get("d_qk") == 512 else "") + ("_qfp8" if spec.get("q_fp8") else ""))
        backends = ["portable"]
        if hopper and hopper_supports(DecodeKey(layout=spec["layout"], d_qk=spec.get("d_qk", DecodeKey.d_qk),
                                                sparsity="sparse" if spec["sparse"] else "dense")):
            backends.append("hopper")
        for backend in backends:
            items.append(Item(f"{name}/{backend}", case, dict(backend=backend)))
    return items


def _family_case(rng, spec, num_heads, extra, seq_lens) -> Case:
    spec = dict(spec)
    sparse, layout, mask = spec.pop("sparse"), spec.pop("layout"), spec.pop("mask")
    if sparse:
        case = make_sparse_case(rng, seq_lens=seq_lens, cache_lens=[0, 5, 60, 33],
                                indices_stride=70, num_heads=num_heads, page_size=7, layout=layout,
                                mask=mask, fold=spec.pop("fold"), topk="random",
                                logical=mask == "causal", extra_stride=extra, extra_page_size=3,
                                extra_topk="random", valid_fraction=0.5, sink="random",
                                num_layers=2, layer_idx=1)
    else:
        case = make_case(rng, seq_lens=seq_lens, cache_lens=[0, 45, 9, 130], num_heads=num_heads,
                         page_size=16, layout=layout, mask=mask, window=40, sink="random",
                         num_layers=2, layer_idx=1, **spec)
    return poison_unread(case)
