"""Sparse decode on the GPU against the NumPy reference (marker ``gpu``):
top-k index lists, garbage and -1 indices, logical positions, the extra
stream, fold_shared_index, sinks, forced num_partitions."""
from __future__ import annotations

import numpy as np
import pytest
from hypothesis import given

from mla_cupy.testing import assert_schedule_ran, check_against_reference, make_sparse_case, run_gpu
from strategies import SCORE_STEPS_LOG2, sparse_cases

pytestmark = pytest.mark.gpu


_check = check_against_reference


@given(sparse_cases())
def test_matches_reference(compiled_kernels, case):
    _check(case)


@pytest.mark.parametrize("topk", [1, 63, 64, 65, 2048, 5000])
def test_topk_sizes_and_more_partitions_than_slots(compiled_kernels, rng, topk):
    case = make_sparse_case(rng, seq_lens=[1, 2, 1], cache_lens=[100, 4000, 0], indices_stride=topk,
                            num_heads=16, sink="random", extra_stride=5)
    for p in (1, 3, 64):
        _check(case, num_partitions=p)


def test_rows_without_a_valid_slot_give_zero_and_minus_inf(compiled_kernels, rng):
    case = make_sparse_case(rng, seq_lens=[2, 1], cache_lens=[10, 10], indices_stride=40,
                            valid_fraction=0.0, sink="random")
    for p in (1, 4):
        out, lse, _, _ = _check(case, num_partitions=p)
        assert (out == 0).all() and np.isneginf(lse).all(), case.describe()


@pytest.mark.parametrize("value", [np.inf, -np.inf])
def test_infinite_sinks(compiled_kernels, rng, value):
    case = make_sparse_case(rng, seq_lens=[1, 3], cache_lens=[50, 200], indices_stride=100,
                            num_heads=8, sink=np.full(8, value, np.float32), extra_stride=10)
    for p in (1, 5):
        out, _, _, _ = _check(case, num_partitions=p)
        assert np.isfinite(out).all(), case.describe()
        if value > 0:
            assert (out == 0).all(), case.describe()


@pytest.mark.parametrize("seq_len,num_heads", [(2, 16), (4, 16), (8, 8), (5, 128), (3, 20)])
def test_fold_equals_unfolded_with_first_row_copied(compiled_kernels, rng, seq_len, num_heads):
    case = make_sparse_case(rng, seq_lens=[seq_len, seq_len - 1, 1], cache_lens=[600, 30, 1000],
                            indices_stride=256, num_heads=num_heads, fold=True, logical=True,
                            topk="random", extra_stride=12, sink="random")
    # Both runs are checked against the reference, which test_reference holds to
    # fold == rows copied; a direct folded-vs-unfolded bound would follow from those
    # two by the triangle inequality, so it is not asserted again.
    _check(case)
    offs = case.input_row_offsets
    for b in range(case.batch_size):
        first = int(offs[b])
        if int(offs[b + 1]) == first:
            continue
        for key in ("d_indices", "logical_indices"):
            case.sparse[key][first:int(offs[b + 1])] = case.sparse[key][first]
    case.sparse["fold_shared_index"] = False
    _check(case)


def test_deterministic_reruns(compiled_kernels, rng):
    case = make_sparse_case(rng, seq_lens=[3, 1], cache_lens=[500, 700], indices_stride=512,
                            num_heads=64, fold=True, extra_stride=33, sink="random")
    out, lse, _, _ = _check(case, num_partitions=6)
    again_out, again_lse = run_gpu(case, num_partitions=6)
    assert np.array_equal(again_out, out) and np.array_equal(again_lse, lse), case.describe()


@pytest.mark.parametrize("layout", ["bf16", "fp8_ds_mla"])
@pytest.mark.parametrize("logical", [False, True])
def test_slot_hidden_by_the_causal_rule_is_never_read(compiled_kernels, rng, layout, logical):
    """Unfolded sparse causal with two new tokens: a slot the causal rule hides
    from token 0 points at a NaN row.  Masked means never read (docs/spec.md §11):
    the output must match the reference, not turn NaN (0 * NaN in P V)."""
    cache_len, stride = 30, 40
    case = make_sparse_case(rng, seq_lens=[2, 1], cache_lens=[cache_len, 12], indices_stride=stride,
                            num_heads=16, page_size=7, layout=layout, logical=logical,
                            valid_fraction=1.0)
    blocks = case.blocks[:, case.layer_idx]
    dead = np.isnan(blocks[..., 0]) if layout == "bf16" else (blocks[..., 0] == 0xFF)
    block, slot = (int(i) for i in np.argwhere(dead)[0])
    hidden = cache_len + 1                     # slot position past C_b + 0: hidden from token 0 only
    case.sparse["d_indices"][0, hidden] = block * case.page_size + slot
    if logical:
        case.sparse["logical_indices"][0, hidden] = cache_len + 1
    for p in (1, 3):
        out, _, _, _ = _check(case, num_partitions=p)
        assert np.isfinite(out).all(), case.describe()


@pytest.mark.parametrize("layout", ["fp8_ds_mla", "fp8"])
@pytest.mark.parametrize("mask", ["null", "causal"])
def test_narrow_schedule_sparse(compiled_kernels, rng, monkeypatch, layout, mask):
    """The narrow schedule forced over sparse fp8 layouts (a bulk copy per key,
    the tokens that see each key written beside the tile): garbage and -1 indices,
    topk_lengths, logical positions, the extra stream, fold_shared_index (row groups
    of 16 rows or fewer), sinks, every split count; the launched variant is checked
    to be the narrow kernel (the portable one under MLA_CUPY_BACKEND=portable)."""
    from mla_cupy import dispatch
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "narrow")
    shapes = [(16, [1, 2, 1], dict()), (16, [2, 1], dict(extra_stride=40, extra_topk="random", logical=True)),
              (8, [2, 2, 1], dict(fold=True)), (4, [3, 1], dict(fold=True, extra_stride=24, topk="random")),
              (32, [1, 1], dict()), (16, [2, 1], dict(fold=True))]   # 32 rows: the 32-row tile
    for num_heads, seq_lens, kw in shapes:
        monkeypatch.setattr(dispatch, "_eager_plans", {})
        case = make_sparse_case(rng, seq_lens=seq_lens, cache_lens=[300, 4000, 70][:len(seq_lens)],
                                indices_stride=int(rng.choice([37, 130, 700])), num_heads=num_heads,
                                layout=layout, mask=mask, sink="random", valid_fraction=0.7,
                                page_size=int(rng.choice([1, 16, 64])), **kw)
        for p in (1, 3):
            _check(case, num_partitions=p)
        assert_schedule_ran(dispatch._eager_plans.values(), "_hopper_narrow", case.describe())


@pytest.mark.parametrize("layout,num_heads", [("fp8_ds_mla", 128), ("bf16", 128), ("bf16", 16)])
def test_running_max_kept_behind_and_moved(compiled_kernels, rng, layout, num_heads):
    """Scores shifted by a random walk over the cache's rows (steps of either sign,
    an eighth of the dense test's: ~16 log2 units a tile of sorted indices) and every
    token's indices sorted (garbage ones at both ends), so that each tile's max is
    kept behind the running max, moves past it or lies far under it, as in the dense
    test: the pair (fp8_ds_mla, 128 heads) and the ring's sparse row groups."""
    steps = rng.choice(SCORE_STEPS_LOG2, size=1 << 12) * rng.choice([-1.0, 1.0], size=1 << 12) / 8
    row_offsets = np.cumsum(steps) * np.log(2.0)
    case = make_sparse_case(rng, seq_lens=[1, 2, 1], cache_lens=[300, 4000, 70], indices_stride=700,
                            num_heads=num_heads, layout=layout, sink="random", live_rows=1500,
                            key_offsets=lambda r: row_offsets[r])
    case.sparse["d_indices"].sort(axis=1)
    for p in (1, 3):
        _check(case, num_partitions=p)


@pytest.mark.parametrize("jobs", ["one_a_cta", "persistent"])
@pytest.mark.parametrize("mask", ["null", "causal"])
def test_pair_schedule_sparse(compiled_kernels, rng, monkeypatch, mask, jobs):
    """The pair schedule forced (MLA_CUPY_HOPPER_SCHEDULE=pair) over fp8_ds_mla in whole
    pairs of 64-row tiles (h = 128; clusters of two CTAs, each dequantising half of
    every tile into both): garbage
    and -1 indices, topk_lengths, logical positions, the extra stream, several tokens a
    sequence, sinks, page sizes 1 / 16 / 64, one and three splits; the launched
    variant is checked to be the pair kernel (the portable one under
    MLA_CUPY_BACKEND=portable).  ``persistent``: the grid built as for a device of two
    SMs (schedule.pair_grid_z: one z), so every CTA runs each sequence's job in turn,
    those of tokens past a shorter sequence skipped, empty ones (topk_lengths 0)
    among them."""
    from mla_cupy import dispatch
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "pair")
    if jobs == "persistent":
        monkeypatch.setattr(dispatch, "sm_count_of_current_device", lambda: 2)
    shapes = [(128, [1, 2, 1], dict()), (128, [2, 1], dict(extra_stride=40, extra_topk="random", logical=True)),
              (128, [1, 1], dict(topk="random")), (128, [3], dict(extra_stride=24, topk="random"))]
    for num_heads, seq_lens, kw in shapes:
        monkeypatch.setattr(dispatch, "_eager_plans", {})
        case = make_sparse_case(rng, seq_lens=seq_lens, cache_lens=[300, 4000, 70][:len(seq_lens)],
                                indices_stride=int(rng.choice([37, 130, 700])), num_heads=num_heads,
                                layout="fp8_ds_mla", mask=mask, sink="random", valid_fraction=0.7,
                                page_size=int(rng.choice([1, 16, 64])), **kw)
        for p in (1, 3):
            _check(case, num_partitions=p)
        if assert_schedule_ran(dispatch._eager_plans.values(), "_hopper_pair", case.describe()):
            grid_z = {plan.grid[2] for plan in dispatch._eager_plans.values()}
            assert grid_z == ({1} if jobs == "persistent" else {len(seq_lens)}), (grid_z, case.describe())
