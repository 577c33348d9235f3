"""Dense decode on the GPU against the NumPy reference (marker ``gpu``)."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings

from mla_cupy.testing import (assert_schedule_ran, check_against_reference, compare, fill_nan, make_case, nan_filled,
                              nan_workspace, reference, run_gpu, to_torch, tolerance_for)
from strategies import SCORE_STEPS_LOG2, dense_cases

pytestmark = pytest.mark.gpu


def _check(case, **kw):
    return check_against_reference(case, **kw)[:3]


@given(dense_cases())
def test_matches_reference(compiled_kernels, case):
    _check(case)


@given(dense_cases(max_batch=3))
@settings(max_examples=20)
def test_outputs_inside_hull_of_v(compiled_kernels, case):
    out, _, _ = _check(case)
    v = case.blocks[:, case.layer_idx, :, :512].astype(np.float64)
    v = v[np.isfinite(v).all(axis=-1)]
    if case.attn_sink is not None:   # the sink mixes in a zero vector
        v = np.concatenate([v, np.zeros((1, 512))])
    if v.size:
        lo, hi = v.min(axis=0), v.max(axis=0)
        slack = 2.0**-7 * np.abs(v).max()
        assert (out >= lo - slack).all() and (out <= hi + slack).all(), case.describe()


@pytest.mark.parametrize("num_heads", [128, 64, 16])
@pytest.mark.parametrize("dtype", ["bfloat16", "float16"])
def test_running_max_kept_behind_and_moved(compiled_kernels, rng, num_heads, dtype):
    """Scores that climb and fall from one 64-key tile to the next by steps under, at
    and past the kernels' max slack, so the running max is kept behind (P values up
    to 2^8, in 16-bit P), moved, and far ahead of a tile (P underflowing to 0): the
    seesaw, ring and narrow row groups (128, 64, 16 heads; s_q 2 doubles them), one
    and three splits."""
    tile_offsets = np.concatenate([[0.0], np.cumsum(rng.choice(SCORE_STEPS_LOG2, size=80))]) * np.log(2.0)
    case = make_case(rng, seq_lens=[1, 2, 1, 0], cache_lens=[4000, 700, 129, 64], num_heads=num_heads,
                     dtype=dtype, mask="causal", sink="random", key_offsets=lambda j: tile_offsets[j // 64])
    for p in (1, 3):
        _check(case, num_partitions=p)


@pytest.mark.parametrize("num_heads", [128, 64, 32, 16])
def test_every_score_far_below_zero(compiled_kernels, rng, num_heads):
    """Every score of every row near -120 (natural log; -173 in log2 units): a row's first
    running max lies below -128, where a factor of exp2(-max) for the nothing accumulated
    before it is inf and 0 x inf NaN (the narrow and seesaw kernels' softmax did that until
    session 47: NaN at h 64 and 128 on the H200).  Seesaw, ring and narrow row groups, one
    and three splits."""
    case = make_case(rng, seq_lens=[1, 2, 1], cache_lens=[700, 129, 64], num_heads=num_heads,
                     mask="causal", key_offsets=lambda j: -120.0)
    for p in (1, 3):
        _check(case, num_partitions=p)


@pytest.mark.parametrize("num_heads,seq_lens", [(16, [1] * 5), (128, [1, 2, 0, 3]), (20, [4, 4]),
                                                (16, [1] * 64)])
def test_independent_of_num_partitions_and_deterministic(compiled_kernels, rng, num_heads, seq_lens):
    max_cache = 3000 if len(seq_lens) < 64 else 300
    case = make_case(rng, seq_lens=seq_lens, cache_lens=rng.integers(0, max_cache, len(seq_lens)),
                     num_heads=num_heads, page_size=64, sink="random")
    ref_out, ref_lse = reference(case)
    tol = tolerance_for(case)
    outs = {}
    for p in (1, 2, 5, 16, 64, 200):
        outs[p] = run_gpu(case, num_partitions=p)
        cmp = compare(*outs[p], ref_out, ref_lse, tol=tol)
        assert cmp.ok, f"{case.describe()} P={p}: {cmp.message}"
    for p in (1, 5):
        again = run_gpu(case, num_partitions=p)
        assert np.array_equal(again[0], outs[p][0]) and np.array_equal(again[1], outs[p][1]), \
            f"{case.describe()} P={p}: a rerun differs"


def test_combine_of_more_partitions_than_it_caches(compiled_kernels, rng, monkeypatch):
    """The combine keeps up to 1024 partials' lse in shared memory and reads
    the rest again; 1100 splits of 5000 keys also leave most splits empty
    (lse -inf, O never written: the NaN-filled workspace must stay unread)."""
    from mla_cupy import dispatch
    monkeypatch.setattr(dispatch, "_owned_workspace", nan_workspace)
    monkeypatch.setattr(dispatch, "_workspaces", {})
    monkeypatch.setattr(dispatch, "_eager_plans", {})
    case = make_case(rng, seq_lens=[1, 2], cache_lens=[5000, 4097], num_heads=16, page_size=64,
                     sink="random")
    for p in (7, 9, 1100):
        _check(case, num_partitions=p)


@pytest.mark.parametrize("split", ["partitions", "auto"])
def test_warp_row_combine_is_the_one_group_combine_bit_for_bit(compiled_kernels, rng, monkeypatch, split):
    """Where a row gets one group (P <= 4, and segment mode's or balanced splits'
    seg_info rows), the combine runs eight rows a CTA, a warp each
    (render.combine_shape); its sums must be the one-group CTA's exactly, or a row's
    result would depend on the launch (batch invariance, docs/spec.md section 10).
    The same decode, then each shape of the combine, on NaN-filled outputs: equal bits,
    heads that fill a CTA of rows and heads that do not (5, 12), sinks, fp16."""
    from mla_cupy import dispatch, render
    monkeypatch.setattr(dispatch, "_owned_workspace", nan_workspace)
    monkeypatch.setenv("MLA_CUPY_SPLIT", split)
    one_group = lambda p, h, t: render.CombineShape(False, (h, t), (render.combine_threads(p),))   # noqa: E731
    for heads, seqs, caches, kw in ((16, [1, 2], [5000, 4097], {}), (5, [1, 1, 3], [9000, 10, 700], {}),
                                    (12, [2, 1], [3000, 64], dict(dtype=np.float16)),
                                    (128, [1] * 6, [20000, 5, 3000, 64, 9000, 1], {})):
        case = make_case(rng, seq_lens=seqs, cache_lens=caches, num_heads=heads, page_size=64,
                         sink="random", **kw)
        for p in ((2, 3, 4) if split == "partitions" else (None,)):
            runs = []
            for shape in (render.combine_shape, one_group):
                monkeypatch.setattr(dispatch, "combine_shape", shape)
                monkeypatch.setattr(dispatch, "_workspaces", {})
                monkeypatch.setattr(dispatch, "_eager_plans", {})
                runs.append(run_gpu(case, num_partitions=p))
            (out_w, lse_w), (out_g, lse_g) = runs
            assert np.array_equal(out_w, out_g, equal_nan=True) and np.array_equal(lse_w, lse_g, equal_nan=True), \
                f"{case.describe()} P={p}: the warp rows' combine differs from the one group's"
            assert not np.isnan(out_w).any(), case.describe()


# How the Hopper family walks and loads a dense cache (on other devices the
# portable kernels run): the ring with cp.async (its default) or TMA, the seesaw
# (TMA only).
HOPPER_MODES = {"ring": dict(MLA_CUPY_HOPPER_SCHEDULE="ring"),
                "seesaw": dict(MLA_CUPY_HOPPER_SCHEDULE="seesaw")}


@pytest.mark.parametrize("mode", list(HOPPER_MODES))
@pytest.mark.parametrize("page_size", [8, 16, 64, 128])
@pytest.mark.parametrize("mask,window", [("causal", -1), ("sliding_window_causal", 37), ("null", -1)])
def test_hopper_schedules_and_loads(compiled_kernels, rng, monkeypatch, mode, page_size, mask, window):
    """Each Hopper mode forced: TMA tiles of whole boxes per page, rows outside
    the split zeroed (unused slots hold NaN), a window's unaligned first tile,
    the seesaw's pairs of 64-key tiles with odd tile counts, 16 and 128 heads,
    s_q up to 3, every split count."""
    for name, value in HOPPER_MODES[mode].items():
        monkeypatch.setenv(name, value)
    for num_heads in (128, 16):
        case = make_case(rng, seq_lens=[1, 3, 0, 2], cache_lens=[777, 2049, 64, 5],
                         num_heads=num_heads, page_size=page_size, mask=mask, window=window,
                         sink="random", num_layers=2, layer_idx=1)
        for p in (1, 3):
            _check(case, num_partitions=p)


@pytest.mark.parametrize("page_size", [8, 16, 64, 128])
@pytest.mark.parametrize("mask,window", [("causal", -1), ("sliding_window_causal", 37), ("null", -1)])
def test_narrow_schedule(compiled_kernels, rng, monkeypatch, page_size, mask, window):
    """The narrow schedule forced (keys as the MMA's M, 16-row tiles): row groups of
    16 rows or fewer (16 heads at s_q 1, 5 heads at s_q 3, one head), a window's
    unaligned first tile, tiles with keys past the split zeroed (unused slots hold
    NaN), D_qk 512 and fp16, sinks, every split count.  The launched variant is
    checked to be the narrow kernel, or the portable one where MLA_CUPY_BACKEND
    forces it (the schedule must not override the backend)."""
    from mla_cupy import dispatch
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "narrow")
    for num_heads, seq_lens, kw in ((16, [1, 1, 0, 1], {}), (5, [3, 1, 0, 2], dict(d_qk=512)),
                                    (1, [2, 3, 1, 1], dict(dtype=np.float16)), (16, [1], dict(d_qk=512)),
                                    (32, [1, 1, 0, 1], {}), (16, [2, 1, 0, 2], dict(dtype=np.float16)),
                                    (5, [6, 4, 0, 1], dict(d_qk=512))):   # 17-32 rows: the 32-row tile
        monkeypatch.setattr(dispatch, "_eager_plans", {})
        case = make_case(rng, seq_lens=seq_lens, cache_lens=[777, 2049, 64, 5][:len(seq_lens)],
                         num_heads=num_heads, page_size=page_size, mask=mask, window=window,
                         sink="random", num_layers=2, layer_idx=1, **kw)
        for p in (1, 3):
            _check(case, num_partitions=p)
        assert_schedule_ran(dispatch._eager_plans.values(), "_hopper_narrow", case.describe())


@pytest.mark.parametrize("layout", ["fp8_ds_mla", "fp8"])
@pytest.mark.parametrize("page_size", [3, 16, 64])
@pytest.mark.parametrize("mask,window", [("causal", -1), ("sliding_window_causal", 37), ("null", -1)])
def test_narrow_schedule_fp8(compiled_kernels, rng, monkeypatch, layout, page_size, mask, window):
    """The narrow schedule forced over fp8 layouts (its copying warps copy each tile's
    records: `fp8_ds_mla` and 512-byte `fp8` rows by bulk copies, a run inside a page each, at
    any page size; 576-byte `fp8` rows by TMA column boxes of whole pages, render.narrow_tma_raw,
    whose pages no box fits run the ring); keys past the split zeroed (unused slots hold NaN),
    D_qk 512 for fp8, sinks, every split count; the launched variant is checked."""
    from mla_cupy.tensor_map import raw_box_rows
    from mla_cupy import dispatch
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "narrow")
    monkeypatch.setenv("MLA_CUPY_BACKEND", "hopper")   # (the Hopper family demanded: no portable fallback)
    shapes = [(16, [1, 1, 0, 1], {}), (5, [3, 1, 0, 2], {}), (1, [2, 3, 1, 1], {}), (32, [1, 0, 1], {})]
    if layout == "fp8":
        shapes.append((16, [1, 1], dict(d_qk=512)))
    for num_heads, seq_lens, kw in shapes:
        monkeypatch.setattr(dispatch, "_eager_plans", {})
        case = make_case(rng, seq_lens=seq_lens, cache_lens=[777, 2049, 64, 5][:len(seq_lens)],
                         num_heads=num_heads, page_size=page_size, mask=mask, window=window,
                         sink="random", num_layers=2, layer_idx=1, layout=layout, **kw)
        for p in (1, 3):
            _check(case, num_partitions=p)
        boxed = layout == "fp8" and kw.get("d_qk", 576) == 576
        suffix = "_hopper" if boxed and raw_box_rows(page_size, 64) == 0 else "_hopper_narrow"
        assert_schedule_ran(dispatch._eager_plans.values(), suffix, case.describe())


@pytest.mark.parametrize("mask,window", [("causal", -1), ("sliding_window_causal", 300), ("null", -1)])
def test_segment_mode(compiled_kernels, rng, monkeypatch, mask, window):
    """The narrow kernel's shares of the batch's tiles (split chosen by the
    dispatcher; kernels/common/sequence.cuh.j2): equal shares for ragged lengths,
    with sequences spread over several shares, many short sequences in one share,
    empty sequences (s_q 0), one-key caches, a single long sequence over every
    share, fewer tiles than CTAs, up to 32 rows (the 32-row tile, forced: auto gives
    17-32 rows the ring); the aligned cut for even batches.  Unused cache slots and
    the workspace hold NaN.  The launch is checked to be segment mode (grid (1, SMs, 1); the splits under
    MLA_CUPY_BACKEND=portable), and forcing the splits gives the same answer
    within the tolerance."""
    from mla_cupy import dispatch
    monkeypatch.setattr(dispatch, "_owned_workspace", nan_workspace)
    monkeypatch.setattr(dispatch, "_workspaces", {})
    batches = [
        (16, [1] * 24, list(rng.integers(1, 20000, 24)), {}),
        (16, [1, 0, 1, 1] * 50, list(rng.choice([0, 1, 63, 64, 65, 700], 200)), {}),
        (16, [1] * 300, list(rng.choice([1, 5, 64, 200, 3000], 300)), {}),   # two rounds of the scan
        (16, [1], [150000], {}),
        (8, [2, 1, 0, 4], [5, 0, 77, 3], {}),                        # fewer tiles than CTAs
        (32, [1] * 9, list(rng.integers(1, 9000, 9)), dict(d_qk=512)),
        (16, [2, 1, 2], [3000, 17, 9000], dict(dtype=np.float16)),   # 32 rows
        # even batches, the aligned cut: 2 pieces a sequence; whole sequences a CTA
        # (the combine leaves them alone); 16 pieces of each of 8 sequences
        (16, [1] * 64, list(300 + rng.integers(0, 20, 64)), {}),
        (16, [1] * 132, [100] * 132, {}),
        (16, [1, 1, 0, 1, 1, 1, 1, 1, 1], [1000] * 9, {}),
    ]
    for num_heads, seq_lens, cache_lens, kw in batches:
        monkeypatch.setattr(dispatch, "_eager_plans", {})
        if num_heads * max(seq_lens) > 16:
            monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "narrow")
        else:
            monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
        case = make_case(rng, seq_lens=seq_lens, cache_lens=cache_lens, num_heads=num_heads,
                         page_size=int(rng.choice([16, 64, 128])), mask=mask, window=window, sink="random",
                         **kw)
        _check(case)
        plans = list(dispatch._eager_plans.values())
        if assert_schedule_ran(plans, "_hopper_narrow", case.describe()):   # (portable: the splits)
            assert all(p.grid[0] == 1 and p.grid[2] == 1 and p.grid[1] > 1 for p in plans), \
                ([(p.variant, p.grid) for p in plans], case.describe())
        monkeypatch.setenv("MLA_CUPY_SPLIT", "partitions")
        _check(case)
        monkeypatch.delenv("MLA_CUPY_SPLIT")


@pytest.mark.parametrize("mask,window", [("causal", -1), ("sliding_window_causal", 300)])
def test_short_streams_run_the_evict_first_twin(compiled_kernels, rng, monkeypatch, mask, window):
    """compiler.takes_evict_first: a batch whose segment-mode shares hold at most 16 tiles
    (8 sequences of up to 8K keys: ~8 a share) runs the narrow kernel's `_evict_first`
    twin, a longer one (40 sequences of 3-4K keys: ~20 a share) the plain kernel; both
    against the reference, with NaN in the workspace and in unused cache slots and the
    pages permuted (make_case)."""
    from mla_cupy import dispatch
    monkeypatch.setattr(dispatch, "_owned_workspace", nan_workspace)
    monkeypatch.setattr(dispatch, "_workspaces", {})
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    for cache_lens, twin in ((list(rng.integers(1, 8192, 8)), True), (list(rng.integers(3000, 4096, 40)), False)):
        monkeypatch.setattr(dispatch, "_eager_plans", {})
        case = make_case(rng, seq_lens=[1] * len(cache_lens), cache_lens=cache_lens, num_heads=16,
                         page_size=int(rng.choice([16, 64, 128])), mask=mask, window=window, sink="random")
        _check(case)
        plans = list(dispatch._eager_plans.values())
        if assert_schedule_ran(plans, "_hopper_narrow", case.describe()):   # (portable: no twin)
            assert all(p.variant.endswith("_evict_first") == twin and p.grid[1] > 1 for p in plans), \
                ([(p.variant, p.grid) for p in plans], case.describe())


@pytest.mark.parametrize("mask,window", [("causal", -1), ("sliding_window_causal", 300), ("null", -1)])
def test_tile_pairs_of_one_token_run_the_multicast_twin(compiled_kernels, rng, monkeypatch, mask, window):
    """compiler.takes_multicast: h 128 (a token's heads fill a pair of 64-row tiles) runs the
    seesaw's `_multicast` twin, clusters of two CTAs sharing each key box, over ragged
    queries (1-3 tokens, so some clusters of a sequence have no rows and leave together)
    and split or unsplit keys, the twin taken however short a split (the rule's floor
    lowered to one tile); h 96 the plain seesaw.  Each against the reference, with NaN
    in the workspace and in unused cache slots and the pages permuted (make_case)."""
    from mla_cupy import compiler, dispatch
    monkeypatch.setattr(dispatch, "_owned_workspace", nan_workspace)
    monkeypatch.setattr(dispatch, "_workspaces", {})
    # short splits too: a split's first and last tiles, and clusters with nothing to do
    monkeypatch.setattr(compiler, "MULTICAST_MIN_SPLIT_TILES", 1)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    for num_heads, twin in ((128, True), (96, False)):
        for num_partitions in (None, 1, 3):
            monkeypatch.setattr(dispatch, "_eager_plans", {})
            b = int(rng.integers(1, 6))
            case = make_case(rng, seq_lens=list(rng.integers(1, 4, b)), cache_lens=list(rng.integers(1, 3000, b)),
                             num_heads=num_heads, page_size=int(rng.choice([16, 64, 128])), mask=mask, window=window,
                             sink="random", num_partitions=num_partitions)
            _check(case)
            plans = list(dispatch._eager_plans.values())
            if assert_schedule_ran(plans, "_hopper_seesaw", case.describe()):   # (portable: no twin)
                assert all(("_multicast" in p.variant) == twin for p in plans), \
                    ([p.variant for p in plans], case.describe())


@pytest.mark.parametrize("mask", ["causal", "null"])
def test_multicast_twin_segment_mode(compiled_kernels, rng, monkeypatch, mask):
    """The seesaw's `_segments` twin (MLA_CUPY_SPLIT=segments; a cluster of two CTAs a
    share of the batch's 64-key tiles, tiles numbered on across its segments, a segment
    of an odd count ending on a phantom tile, the next segment's Q loaded under the
    epilogue): h 128, s_q 1; ragged lengths over several shares, dozens of short
    sequences in one share (one-tile segments, tiles 63/64/65), empty sequences (s_q 0),
    a single long sequence over every share, fewer tiles than shares, an even batch
    (the aligned cut), fp16.  Unused cache slots and the workspace hold NaN, the pages
    are permuted.  The launch is checked to be the twin in segment mode (grid (2, SMs / 2,
    1)), and the splits give the same answer within the tolerance."""
    from mla_cupy import dispatch
    monkeypatch.setattr(dispatch, "_owned_workspace", nan_workspace)
    monkeypatch.setattr(dispatch, "_workspaces", {})
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    batches = [
        ([1] * 24, list(rng.integers(1, 20000, 24)), {}),
        ([1, 0, 1, 1] * 40, list(rng.choice([0, 1, 31, 63, 64, 65, 127, 128, 700], 160)), {}),
        ([1, 1, 0, 1], [5, 0, 77, 3], {}),                           # fewer tiles than shares
        ([1], [150000], {}),
        ([1] * 9, list(rng.integers(1, 9000, 9)), dict(dtype=np.float16)),
        ([1] * 66, list(4000 + rng.integers(0, 20, 66)), {}),        # even: the aligned cut
    ]
    for seq_lens, cache_lens, kw in batches:
        monkeypatch.setattr(dispatch, "_eager_plans", {})
        monkeypatch.setenv("MLA_CUPY_SPLIT", "segments")
        case = make_case(rng, seq_lens=seq_lens, cache_lens=cache_lens, num_heads=128,
                         page_size=int(rng.choice([16, 64, 128])), mask=mask, sink="random", **kw)
        _check(case)
        plans = list(dispatch._eager_plans.values())
        if assert_schedule_ran(plans, "_hopper_seesaw", case.describe()):   # (portable: the splits)
            sms = dispatch.sm_count_of_current_device()
            assert all(p.variant.endswith("_multicast_segments") and p.grid == (2, sms // 2, 1) for p in plans), \
                ([(p.variant, p.grid) for p in plans], case.describe())
        monkeypatch.setenv("MLA_CUPY_SPLIT", "partitions")
        _check(case)
    monkeypatch.delenv("MLA_CUPY_SPLIT")


@pytest.mark.parametrize("mask,window", [("causal", -1), ("sliding_window_causal", 300), ("null", -1)])
def test_ring_segment_mode(compiled_kernels, rng, monkeypatch, mask, window):
    """The dense ring kernel in segment mode (MLA_CUPY_SPLIT=segments; its producer's
    ring and mbarrier phases run on across a share's segments, warpgroup 0 loads the
    next segment's Q): 64, 32 and 8 rows a sequence (h64, h32 s_q 2, h16 s_q 4), ragged
    lengths spread over several shares, dozens of short sequences in one share, empty
    sequences (s_q 0), one-key caches, a single long sequence over every share, fewer
    units than CTAs, the aligned cut of an even batch, fp16 and D_qk 512.  Unused cache
    slots and the workspace hold NaN.  The launch is checked to be the ring in segment
    mode (grid (1, SMs, 1); a window keeps the splits: render.ring_segments; the splits
    under MLA_CUPY_BACKEND=portable), and the splits give the same answer within the
    tolerance."""
    from mla_cupy import dispatch
    monkeypatch.setattr(dispatch, "_owned_workspace", nan_workspace)
    monkeypatch.setattr(dispatch, "_workspaces", {})
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "ring")
    batches = [
        (64, [1] * 24, list(rng.integers(1, 20000, 24)), {}),
        (64, [1, 0, 1, 1] * 50, list(rng.choice([0, 1, 31, 32, 33, 63, 64, 65, 700], 200)), {}),
        (32, [2] * 40, list(rng.choice([1, 5, 64, 200, 3000], 40)), {}),
        (16, [4, 3, 0, 4], [5, 0, 77, 3], {}),                       # fewer units than CTAs
        (64, [1], [150000], {}),
        (64, [1] * 9, list(rng.integers(1, 9000, 9)), dict(d_qk=512)),
        (32, [1, 2, 1], [3000, 17, 9000], dict(dtype=np.float16)),
        (64, [1] * 64, list(300 + rng.integers(0, 20, 64)), {}),    # even: the aligned cut
    ]
    for num_heads, seq_lens, cache_lens, kw in batches:
        monkeypatch.setattr(dispatch, "_eager_plans", {})
        monkeypatch.setenv("MLA_CUPY_SPLIT", "segments")
        case = make_case(rng, seq_lens=seq_lens, cache_lens=cache_lens, num_heads=num_heads,
                         page_size=int(rng.choice([16, 64, 128])), mask=mask, window=window, sink="random",
                         **kw)
        _check(case)
        plans = list(dispatch._eager_plans.values())
        if assert_schedule_ran(plans, "_hopper", case.describe()):   # (portable: the splits)
            sms = dispatch.sm_count_of_current_device()
            assert all((p.grid == (1, sms, 1)) == (mask != "sliding_window_causal") for p in plans), \
                ([(p.variant, p.grid) for p in plans], case.describe())
        monkeypatch.setenv("MLA_CUPY_SPLIT", "partitions")
        _check(case)
    monkeypatch.delenv("MLA_CUPY_SPLIT")


@pytest.mark.parametrize("mask", ["causal"])
def test_balanced_splits(compiled_kernels, rng, monkeypatch, mask):
    """The seesaw's balanced splits, and the ring's segment mode on the same batches
    (split chosen by the dispatcher; the split length from the batch's keys, or the
    ring's shares of them; docs/spec.md §7): ragged batches (every
    sequence in grid y's even cuts: a one-key sequence takes one split, written
    directly, the combine leaves it alone), sequences with no new tokens, forty
    sequences, a uniform batch (the host's P each) and one within 1/16 of its mean
    (splits of the mean over P), 64 and 128 heads, s_q 2.  Unused cache slots and the
    workspace hold NaN.  The launch is checked to be balanced where the host's grid
    is one wave (grid y twice the host's P; the splits under MLA_CUPY_BACKEND=portable),
    and forcing P splits a sequence gives the same answer within the tolerance."""
    from mla_cupy import dispatch
    monkeypatch.setattr(dispatch, "_owned_workspace", nan_workspace)
    monkeypatch.setattr(dispatch, "_workspaces", {})
    batches = [
        (128, [1] * 6, [40000, 100, 3000, 64, 5000, 1], {}),
        (64, [1] * 12, list(rng.integers(1, 20000, 12)), {}),
        (128, [2, 1, 0, 2, 1], [9000, 0, 500, 63, 12000], {}),
        (128, [1] * 40, list(rng.choice([1, 64, 700], 39)) + [20000], {}),
        (128, [1] * 8, [4096] * 8, {}),
        # within 1/16 of the mean (splits of the batch's mean over P, not grid y's even cuts)
        (64, [1] * 10, [4000 + 20 * i for i in range(10)], {}),
        (128, [1, 1, 1], [20000, 30, 900], dict(d_qk=512, dtype=np.float16)),
        # one head on pages TMA cannot load (the ring): an odd T x H, whose seg_info
        # offset was off 16-byte alignment (session 17)
        (1, [1, 1, 1, 3, 3], [0, 2330, 817, 1114, 796], dict(page_size=3)),
    ]
    for num_heads, seq_lens, cache_lens, kw in batches:
        monkeypatch.setattr(dispatch, "_eager_plans", {})
        kw = dict(kw)
        case = make_case(rng, seq_lens=seq_lens, cache_lens=cache_lens, num_heads=num_heads,
                         page_size=kw.pop("page_size", int(rng.choice([16, 64, 128]))), mask=mask,
                         sink="random", **kw)
        _check(case)
        plans = list(dispatch._eager_plans.values())
        assert plans, case.describe()
        if any("_hopper" in p.variant for p in plans):    # (portable: the splits)
            # the seesaw balanced where the host's grid is one wave; the ring in segment mode, and
            # the seesaw's `_segments` twin (h 128 at s_q 1)
            sms = dispatch.sm_count_of_current_device()
            assert all((p.variant.endswith("_hopper") and p.grid == (1, sms, 1))
                       or (p.variant.endswith("_hopper_seesaw_multicast_segments") and p.grid == (2, sms // 2, 1))
                       or (p.variant.removesuffix("_multicast").endswith("_hopper_seesaw")
                           and p.grid[1] == p.num_partitions * (
                           dispatch.BALANCED_GRID_FACTOR if p.grid[0] * p.num_partitions * p.grid[2] <= sms else 1))
                       for p in plans), ([(p.variant, p.grid, p.num_partitions) for p in plans], case.describe())
        monkeypatch.setenv("MLA_CUPY_SPLIT", "partitions")
        _check(case)
        monkeypatch.delenv("MLA_CUPY_SPLIT")


@pytest.mark.parametrize("num_heads,layout", [(16, "bf16"), (128, "bf16"), (128, "fp8_ds_mla")])
def test_longest_first_runs_every_sequence_once(compiled_kernels, rng, num_heads, layout):
    """The Hopper kernels hand grid z the sequence of rank z by length
    (common/sequence.cuh.j2): more sequences than a CTA's threads (the ranking's
    second round at 256 threads; fp8_ds_mla's kernel has 384), ties, empty and
    one-key sequences, every split count.  A sequence run twice or never leaves
    NaN rows (outputs are NaN-filled)."""
    batch = 300 if layout == "bf16" else 420
    case = make_case(rng, seq_lens=list(rng.integers(0, 3, size=batch)),
                     cache_lens=list(rng.choice([0, 1, 5, 64, 65, 200, 700], size=batch)),
                     num_heads=num_heads, page_size=64, sink="random", layout=layout)
    for p in (1, 3):
        _check(case, num_partitions=p)


@pytest.mark.parametrize("sink_value,expect_zero", [(-np.inf, False), (np.inf, True)])
def test_infinite_sinks(compiled_kernels, rng, sink_value, expect_zero):
    case = make_case(rng, seq_lens=[1, 2], cache_lens=[300, 70], num_heads=8,
                     sink=np.full(8, sink_value, np.float32))
    for p in (1, 4):
        out, lse, ref_out = _check(case, num_partitions=p)
        assert np.isfinite(out).all(), case.describe()
        if expect_zero:
            assert (out == 0).all(), case.describe()


def test_zero_length_sequences(compiled_kernels, rng):
    # Dense rows always see themselves; S_b = 0 sequences own no rows.
    case = make_case(rng, seq_lens=[0, 1, 0], cache_lens=[50, 0, 0], num_heads=4)
    _check(case)


def test_long_sequence_million_keys(compiled_kernels, rng):
    case = make_case(rng, seq_lens=[1], cache_lens=[1_048_576 + 17], num_heads=16, page_size=64,
                     spare_blocks=1)
    _check(case)


def test_cache_over_2_31_elements(compiled_kernels, rng):
    """Pages beyond element 2**31 of the blocks array (64-bit addressing)."""
    import cupy
    from mla_cupy import PagedKVCollection, mla_decode

    page_size, d = 64, 576
    elems_per_block = page_size * d
    num_blocks = (2**31 // elems_per_block) + 8
    small = make_case(rng, seq_lens=[2], cache_lens=[300], num_heads=16, page_size=page_size,
                      spare_blocks=0)
    used = small.lookup_table[0][small.lookup_table[0] != 2**31 - 1]
    blocks = cupy.empty((num_blocks, 1, page_size, d), dtype=ml_dtypes.bfloat16)
    high = np.arange(num_blocks - len(used), num_blocks, dtype=np.uint32)
    lookup = small.lookup_table.copy()
    for i, blk in enumerate(used):
        blocks[int(high[i])] = cupy.asarray(small.blocks[int(blk)])
        lookup[0, i] = high[i]
    kv = PagedKVCollection(blocks, cupy.asarray(lookup), cupy.asarray(small.cache_lengths), page_size)
    out, lse = nan_filled((2, 16, 512), small.out_dtype), nan_filled((2, 16), np.float32)
    mla_decode(cupy.asarray(small.q), kv, cupy.asarray(small.input_row_offsets), scale=small.scale,
               out=out, lse=lse)
    ref_out, ref_lse = reference(small)
    cmp = compare(out.get().astype(np.float32), lse.get(), ref_out, ref_lse, tol=tolerance_for(small))
    assert int(high[0]) * elems_per_block > 2**31
    assert cmp.ok, f"{small.describe()}: {cmp.message}"


@pytest.mark.parametrize("num_heads", [16, 128])
def test_cuda_graph_replay_with_smaller_batch(compiled_kernels, rng, monkeypatch, num_heads):
    """A captured call replayed with the device batch shrunk (sa.update): 16 heads (the
    narrow kernel) and 128 (the seesaw's `_multicast` twin, its floor of tiles a split
    lowered so these short caches take it: the replay's missing sequences leave both CTAs
    of their clusters at once)."""
    import cupy
    from mla_cupy import compiler, generic_flare_mla_decode_kv_cache_ragged, pack_scalar_args
    monkeypatch.setattr(compiler, "MULTICAST_MIN_SPLIT_TILES", 1)

    H = num_heads
    case = make_case(rng, seq_lens=[1] * 6, cache_lens=rng.integers(1, 2000, 6), num_heads=H)
    tol = tolerance_for(case)
    kv = case.collection(cupy)
    q = cupy.asarray(case.q)
    offs = cupy.asarray(case.input_row_offsets)
    out = nan_filled((6, H, 512), case.out_dtype)
    lse = nan_filled((6, H), np.float32)
    ref_out, ref_lse = reference(case)
    for num_partitions in (1, 4):
        sa = pack_scalar_args(6, 1, kv.max_cache_length, H, num_partitions=num_partitions)
        stream = cupy.cuda.Stream(non_blocking=True)
        args = (q, offs, kv, 0, case.scale, out, sa)
        with stream:
            generic_flare_mla_decode_kv_cache_ragged(*args, lse=lse, stream=stream)  # warm-up
            stream.begin_capture()
            generic_flare_mla_decode_kv_cache_ragged(*args, lse=lse, stream=stream)
            graph = stream.end_capture()
        with stream:   # the fills go on the graph's stream, ahead of its launch
            fill_nan(out)
            fill_nan(lse)
            graph.launch(stream)
        stream.synchronize()
        cmp = compare(out.get().astype(np.float32), lse.get(), ref_out, ref_lse, tol=tol)
        assert cmp.ok, f"{case.describe()} P={num_partitions}: {cmp.message}"
        # replay with 4 sequences: rows of sequences 4, 5 stay untouched
        sa.update(4, stream=stream)
        with stream:
            out.fill(7)
            lse.fill(7)
            graph.launch(stream)
        stream.synchronize()
        got = out.get().astype(np.float32)
        cmp = compare(got[:4], lse.get()[:4], ref_out[:4], ref_lse[:4], tol=tol)
        assert cmp.ok, f"{case.describe()} P={num_partitions}, replayed with 4: {cmp.message}"
        assert (got[4:] == 7).all() and (lse.get()[4:] == 7).all()


@pytest.mark.parametrize("num_heads,mask,window,layout", [
    (16, "causal", -1, "bf16"), (16, "sliding_window_causal", 700, "bf16"), (64, "causal", -1, "bf16"),
    (128, "causal", -1, "bf16"), (128, "sliding_window_causal", 700, "bf16"),
    (64, "causal", -1, "fp8_ds_mla"), (64, "sliding_window_causal", 700, "fp8")])
def test_schedule_reused_by_the_calls_of_a_step(compiled_kernels, rng, monkeypatch, num_heads, mask, window,
                                                layout):
    """A DecodeSchedule (docs/spec.md §12): the first call of a step writes each CTA's
    work (16 heads: segment mode's share; 64 and 128: the ring's and the seesaw's split
    and sequence; the ring's fp8 layouts too) and the later calls read it, with outputs
    and lse bit-identical to a call without one (and matching the reference).  The next
    step (reset()) has a smaller device batch (sa.update) and, under the causal mask,
    shorter lengths written in place (a window's pages outside it are sentinel ids, so
    its lengths stay); then a captured graph whose first call writes and second reads is replayed
    after each step's values land.  Outputs and the workspace are NaN-filled first."""
    import dataclasses

    import cupy
    from mla_cupy import DecodeSchedule, dispatch, generic_flare_mla_decode_kv_cache_ragged, pack_scalar_args
    from mla_cupy import compiler
    monkeypatch.setattr(dispatch, "_owned_workspace", nan_workspace)
    monkeypatch.setattr(dispatch, "_workspaces", {})
    monkeypatch.setattr(dispatch, "_eager_plans", {})
    # (128 heads: the seesaw's `_multicast` twin, its floor lowered for these short caches)
    monkeypatch.setattr(compiler, "MULTICAST_MIN_SPLIT_TILES", 1)
    B, B2, H = 24, 17, num_heads
    case = make_case(rng, seq_lens=[1] * B, cache_lens=list(rng.integers(1, 20000 if H == 16 else 3000, B)),
                     num_heads=H, page_size=int(rng.choice([16, 64, 128])), mask=mask, window=window,
                     sink="random", layout=layout)
    tol = tolerance_for(case)
    kv = case.collection(cupy)
    q, offs = cupy.asarray(case.q), cupy.asarray(case.input_row_offsets)
    sink = cupy.asarray(case.attn_sink)
    sa = pack_scalar_args(B, 1, kv.max_cache_length, H, window=window if window > 0 else None)
    outs = [nan_filled((B, H, 512), case.out_dtype) for _ in range(3)]
    lses = [nan_filled((B, H), np.float32) for _ in range(3)]
    kw = dict(mask_str=mask, local_window_size=window, attn_sink_ptr=sink)

    def call(i, schedule=None, stream=None):
        generic_flare_mla_decode_kv_cache_ragged(q, offs, kv, 0, case.scale, outs[i], sa, lse=lses[i],
                                                 schedule=schedule, stream=stream, **kw)

    refs = {}

    def check(c, i, batch, what):
        key = c.cache_lengths.tobytes()
        if key not in refs:
            refs[key] = reference(c)
        ref_out, ref_lse = refs[key]
        cmp = compare(outs[i].get()[:batch].astype(np.float32), lses[i].get()[:batch], ref_out[:batch],
                      ref_lse[:batch], tol=tol)
        assert cmp.ok, f"{c.describe()} {what}: {cmp.message}"

    def next_step(batch, lens, stream=None):
        sa.update(batch, stream=stream)
        kv.cache_lengths[...] = cupy.asarray(lens)
        for i in range(3):
            fill_nan(outs[i])
            fill_nan(lses[i])
        return dataclasses.replace(case, cache_lengths=lens)

    s = DecodeSchedule()
    call(0)
    call(1, s)
    call(2, s)
    suffix = {16: "_hopper_narrow", 64: "_hopper", 128: "_hopper_seesaw"}[H]
    hopper = assert_schedule_ran(list(dispatch._eager_plans.values()), suffix, case.describe())
    assert s.written == hopper, case.describe()
    if hopper and H == 128:   # the records of the twins' clusters: both CTAs find the same work
        assert all("_multicast" in p.variant for p in dispatch._eager_plans.values()), case.describe()
    check(case, 0, B, "no schedule")
    for i in (1, 2):
        assert (outs[i].view(np.uint16) == outs[0].view(np.uint16)).all(), (case.describe(), i)
        assert (lses[i].view(np.uint32) == lses[0].view(np.uint32)).all(), (case.describe(), i)
    shorter = case.cache_lengths
    if mask == "causal":
        shorter = np.maximum(1, (case.cache_lengths * rng.uniform(0.2, 1.0, B)).astype(case.cache_lengths.dtype))
    step = next_step(B2, shorter)
    s.reset()
    call(1, s)
    call(2, s)
    check(step, 1, B2, "step 2, written")
    check(step, 2, B2, "step 2, read")
    # a captured graph of a step's two calls (planned with the full batch), replayed
    stream = cupy.cuda.Stream(non_blocking=True)
    with stream:
        next_step(B, case.cache_lengths, stream)
        s.reset()
        stream.begin_capture()
        call(1, s, stream)
        call(2, s, stream)
        graph = stream.end_capture()
    for batch, lens in ((B, case.cache_lengths), (B2, shorter)):
        with stream:
            step = next_step(batch, lens, stream)
            graph.launch(stream)
        stream.synchronize()
        check(step, 1, batch, "graph, written")
        check(step, 2, batch, "graph, read")


def test_torch_tensors_in_and_out(compiled_kernels, rng):
    torch = pytest.importorskip("torch")
    from mla_cupy import PagedKVCollection, mla_decode

    case = make_case(rng, seq_lens=[1, 3], cache_lens=[100, 513], num_heads=32, sink="random")

    t = to_torch
    kv = PagedKVCollection(t(case.blocks), t(case.lookup_table), t(case.cache_lengths), case.page_size)
    q = t(case.q)
    # the allocating path (returned tensors) and the caller's NaN-filled buffers
    out, lse = mla_decode(q, kv, t(case.input_row_offsets), scale=case.scale,
                          attn_sink=t(case.attn_sink), return_lse=True)
    assert isinstance(out, torch.Tensor) and out.dtype == torch.bfloat16
    out2, lse2 = nan_filled(out.shape, case.out_dtype, like=q), nan_filled(lse.shape, np.float32, like=q)
    mla_decode(q, kv, t(case.input_row_offsets), scale=case.scale, attn_sink=t(case.attn_sink),
               out=out2, lse=lse2)
    torch.cuda.synchronize()
    assert torch.equal(out, out2) and torch.equal(lse, lse2)
    ref_out, ref_lse = reference(case)
    cmp = compare(out.float().cpu().numpy(), lse.cpu().numpy(), ref_out, ref_lse, tol=tolerance_for(case))
    assert cmp.ok, f"{case.describe()}: {cmp.message}"
