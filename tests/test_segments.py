"""Segment mode's share arithmetic (kernels/common/sequence.cuh.j2: sequence_shares,
SharesWalk), modelled on the CPU: every CTA walks its share of the batch's tiles
and the combine reads each sequence's partials from seg_info.  Keep the model in
step with the kernel's arithmetic when it changes; the GPU tests
(test_gpu_dense.py::test_segment_mode*) check the kernel itself against the
reference."""
import numpy as np
import pytest


def shares_walk(tiles, grid, c):
    """CTA c's segments: (sequence, t0, t1, partial id, partials or 0), as the kernel
    computes them."""
    total = sum(tiles)
    shares = min(grid, total)
    if c >= shares:
        return []
    pos, hi = c * total // shares, (c + 1) * total // shares
    # the sequence holding tile pos (sequence_shares' scan)
    before, u = 0, 0
    while before + tiles[u] <= pos:
        before += tiles[u]
        u += 1
    out = []
    while pos < hi and u < len(tiles):
        n = tiles[u]
        if n == 0:
            u += 1
            continue
        t0, t1 = pos - before, min(n, hi - before)
        pos = before + t1
        if t1 == n:
            before += n
            u += 1
        parts = 0
        if t0 == 0:
            end = before if pos == before else before + n
            parts = (end * shares - 1) // total - c + 1
        out.append((u - 1 if t1 == n else u, t0, t1, c + (u - 1 if t1 == n else u), parts))
    return out


def check_batch(tiles, grid):
    segs = [s for c in range(grid) for s in shares_walk(tiles, grid, c)]
    covered = {}
    first = {}
    ids = {}
    for (u, t0, t1, pid, parts) in segs:
        for t in range(t0, t1):
            assert (u, t) not in covered, "a tile run twice"
            covered[u, t] = pid
        ids.setdefault(u, []).append(pid)
        if t0 == 0:
            first[u] = (pid, parts)
    for u, n in enumerate(tiles):
        assert all((u, t) in covered for t in range(n)), "a tile never run"
        if n == 0:
            assert u not in ids
            continue
        pid0, parts = first[u]
        # the combine reads partials pid0 .. pid0 + parts - 1: exactly the written ones
        assert sorted(ids[u]) == list(range(pid0, pid0 + parts))
        assert all(0 <= p < grid + len(tiles) - 1 for p in ids[u])
        whole = parts == 1
        assert whole == any(t0 == 0 and t1 == n for (v, t0, t1, _, _) in segs if v == u)
    # every share's work differs from the mean by less than a tile
    per_cta = [sum(t1 - t0 for (_, t0, t1, _, _) in shares_walk(tiles, grid, c)) for c in range(grid)]
    busy = [w for w in per_cta if w]
    assert max(busy) - min(busy) <= 1


@pytest.mark.parametrize("seed", range(40))
def test_shares_cover_every_tile_once_and_the_combine_finds_every_partial(seed):
    rng = np.random.default_rng(seed)
    batch = int(rng.integers(1, 300))
    tiles = [int(x) for x in rng.choice([0, 1, 2, 5, 64, 128, 300], size=batch)]
    if not any(tiles):
        tiles[0] = 1
    for grid in (1, 2, 7, 132, 1000):
        check_batch(tiles, grid)


def test_fewer_tiles_than_ctas_leaves_no_gap_between_a_sequences_partials():
    """W < G: the shares are min(G, W), none empty, so a sequence's partials are
    consecutive (with G shares some would be empty and their partials unwritten)."""
    check_batch([3, 1, 2], 132)
    check_batch([1] * 200, 132)
    check_batch([500], 132)


# ---- the dispatcher's choice (no GPU: testing.stub_device) ----
from mla_cupy import PagedKVCollection, ScalarArgs, abi, generic_flare_mla_decode_kv_cache_ragged  # noqa: E402
from mla_cupy.testing import FakeCudaArray as F  # noqa: E402
from mla_cupy.testing import stub_device  # noqa: E402

B, T = 3, 3


def _launch(num_heads, chosen=True, page_size=64, **kw):
    with stub_device() as launches:
        kv = PagedKVCollection(F((5, 1, page_size, 576), "bfloat16"), F((B, 4), np.int32), F((B,), np.int32),
                               page_size, max_cache_length=200)
        generic_flare_mla_decode_kv_cache_ragged(
            q=F((T, num_heads, 576), "bfloat16"), input_row_offsets=F((B + 1,), np.int32), kv_collection=kv,
            layer_idx=0, scale=0.1, output=F((T, num_heads, 512), "bfloat16"),
            scalar_args_buf=ScalarArgs(F((3,), np.int64), B, 1, 2, split_chosen=chosen), **kw)
        return list(launches)


def test_the_narrow_kernel_takes_equal_shares_when_the_split_is_its_to_choose(monkeypatch):
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    decode, combine = _launch(16)
    assert decode.kernel_name.endswith("_m16_hopper_narrow") and decode.grid == (1, 132, 1)
    slot = decode.slots
    assert slot[abi.DECODE.slot("segment_ctas")] == 132 and slot[abi.DECODE.slot("segment_batch")] == B
    # seg_info: in the lse workspace's tail, after (G + B - 1) partials of 16 rows
    lse_part = slot[abi.DECODE.slot("lse_part")]
    assert slot[abi.DECODE.slot("seg_info")] == lse_part + 4 * (132 + B - 1) * 16
    assert combine.slots[abi.COMBINE.slot("seg_info")] == slot[abi.DECODE.slot("seg_info")]
    assert combine.slots[abi.COMBINE.slot("segment_rows")] == 16 and combine.programmatic


@pytest.mark.parametrize("case", ["given split", "env partitions", "ring", "num_partitions_in"])
def test_splits_stay_where_segment_mode_does_not_apply(monkeypatch, case):
    """A split the caller chose, MLA_CUPY_SPLIT=partitions, a kernel other than the
    narrow one (64 heads: the ring), num_partitions_in: the P splits of grid y."""
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    kw, heads, chosen = {}, 16, True
    if case == "given split":
        chosen = False
    elif case == "env partitions":
        monkeypatch.setenv("MLA_CUPY_SPLIT", "partitions")
    elif case == "ring":
        heads = 64
    else:
        kw = dict(num_partitions_in=2)
    decode = _launch(heads, chosen, **kw)[-2]
    assert decode.grid[1:] == (2, B) and decode.slots[abi.DECODE.slot("segment_ctas")] == 0
    assert decode.slots[abi.DECODE.slot("seg_info")] == 0


def test_a_bad_split_choice_is_an_error_before_any_launch(monkeypatch):
    monkeypatch.setenv("MLA_CUPY_SPLIT", "shares")
    with pytest.raises(ValueError, match="MLA_CUPY_SPLIT: expected one of"):
        _launch(16)
