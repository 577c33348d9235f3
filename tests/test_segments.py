"""Segment mode's share arithmetic (kernels/common/sequence.cuh.j2: sequence_shares,
SharesWalk), modelled on the CPU: every CTA walks its share of the batch's tiles
and the combine reads each sequence's partials from seg_info.  Keep the model in
step with the kernel's arithmetic when it changes; the GPU tests
(test_gpu_dense.py::test_segment_mode*) check the kernel itself against the
reference."""
import dataclasses
import pathlib
import re

import numpy as np
import pytest


def _kernel_constant(name):
    """A constant of kernels/common/sequence.cuh.j2, read from the template itself (one
    place for the fact: the model follows the kernel when the constant is refitted)."""
    text = (pathlib.Path(__file__).resolve().parent.parent / "kernels" / "common" / "sequence.cuh.j2").read_text()
    found = re.findall(rf"constexpr long long {name} = (\d+);", text)
    assert len(found) == 1, (name, found)
    return int(found[0])


SEGMENT_CUT_TILES = _kernel_constant("SEGMENT_CUT_TILES")


def shares_plan(tiles, grid, start=0):
    """(units, shares, pieces): sequence_shares<start>' cut, the same in every CTA;
    pieces 0 for the equal cut, else P pieces a sequence (the aligned cut).  start > 0
    weighs each sequence's start in the equal cut as that many units before its tiles."""
    total, batch = sum(tiles), len(tiles)
    if total == 0:
        return 0, 0, 0
    most, fewest = max(tiles), min(n for n in tiles if n > 0)
    p = min(grid // batch, fewest) if batch <= grid else 1
    eq_shares, al_shares = min(grid, total), min(grid, batch * p)
    aligned = -(-batch * p // al_shares) * -(-most // p) <= -(-total // eq_shares) + SEGMENT_CUT_TILES
    weighted_total = total + start * sum(1 for n in tiles if n > 0)
    return (batch * p, al_shares, p) if aligned else (weighted_total, eq_shares, 0)


def shares_walk(tiles, grid, c, start=0):
    """CTA c's segments: (sequence, t0, t1, partial id, partials or 0), as the kernel
    computes them: the walk's own (start 0: the narrow kernel), or with start > 0 the
    ring's (mla_decode_wgmma.cu.j2's next_seg): the equal cut's walk counts start units
    before each sequence's tiles, a segment's tiles are its units past them, and a
    segment of start units alone ends the share."""
    units, shares, pieces = shares_plan(tiles, grid, start)
    if c >= shares:
        return []
    if pieces:
        start = 0
    real = tiles
    tiles = [n + start if n > 0 else 0 for n in tiles]
    x0, x1 = c * units // shares, (c + 1) * units // shares
    starts = [0]
    for n in tiles:
        starts.append(starts[-1] + n)              # units before sequence u
    if pieces:
        def tile_of(x):
            u = x // pieces
            return starts[u] + (x % pieces) * tiles[u] // pieces if u < len(tiles) else starts[-1]
        pos, hi, u = tile_of(x0), tile_of(x1), x0 // pieces
    else:
        pos, hi, u = x0, x1, 0
        while starts[u + 1] <= pos:
            u += 1
    before = starts[u]
    out = []
    while pos < hi and u < len(tiles):
        n = tiles[u]
        if n == 0:
            u += 1
            continue
        t0, t1 = pos - before, min(n, hi - before)
        seq = u
        pos = before + t1
        if t1 == n:
            before += n
            u += 1
        if t1 <= start:
            break                                  # the share ends in the sequence's start units
        parts = 0
        if t0 <= start:
            end = (seq + 1) * pieces if pieces else (before if pos == before else before + n)
            parts = (end * shares - 1) // units - c + 1
        out.append((seq, max(t0 - start, 0), t1 - start, c + seq, parts))
        assert out[-1][2] <= real[seq]
    return out


def check_batch(tiles, grid, start=0):
    segs = [s for c in range(grid) for s in shares_walk(tiles, grid, c, start)]
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
    aligned = shares_plan(tiles, grid, start)[2] > 0
    # a share's work: its tiles and, weighted, start units a sequence it starts
    per_cta = [sum(t1 - t0 + (start if p and not aligned else 0) for (_, t0, t1, _, p) in
                   shares_walk(tiles, grid, c, start)) for c in range(grid)]
    busy = [w for w in per_cta if w]
    equal_share = -(-sum(tiles) // min(grid, sum(tiles)))
    if aligned:
        # aligned: no share past the equal one by more than a cut's cost
        assert max(busy) <= equal_share + SEGMENT_CUT_TILES
    else:
        # equal: every share's work differs from the mean by less than a unit (weighted:
        # counting a sequence's start where its tiles begin, which may lie a share past
        # where its start units began: up to start units either way)
        assert max(busy) - min(busy) <= 1 + 2 * start
    return segs


@pytest.mark.parametrize("seed", range(40))
def test_shares_cover_every_tile_once_and_the_combine_finds_every_partial(seed):
    rng = np.random.default_rng(seed)
    batch = int(rng.integers(1, 300))
    tiles = [int(x) for x in rng.choice([0, 1, 2, 5, 64, 128, 300], size=batch)]
    if not any(tiles):
        tiles[0] = 1
    for grid in (1, 2, 7, 132, 1000):
        check_batch(tiles, grid)
        check_batch(tiles, grid, start=3)


def test_fewer_tiles_than_ctas_leaves_no_gap_between_a_sequences_partials():
    """W < G: the shares are min(G, W), none empty, so a sequence's partials are
    consecutive (with G shares some would be empty and their partials unwritten)."""
    for start in (0, 3):
        check_batch([3, 1, 2], 132, start)
        check_batch([1] * 200, 132, start)
        check_batch([500], 132, start)


@pytest.mark.parametrize("seed", range(20))
def test_the_rings_weighted_cut_gives_shares_of_more_sequences_fewer_tiles(seed):
    """The ring's equal cut weighs a sequence's start as 3 units (sequence_shares<3>):
    a DeepSeek-like ragged batch's shares then hold their units' worth of work counting
    each sequence they start, so a share that starts a sequence runs fewer tiles than
    one that continues a sequence alone; every tile still runs once and the combine finds
    every partial."""
    rng = np.random.default_rng(2000 + seed)
    tiles = [int(x) for x in np.clip(rng.normal(128, 64, 64), 1, None)]
    plain = [sum(t1 - t0 for (_, t0, t1, _, _) in shares_walk(tiles, 132, c)) for c in range(132)]
    assert max(plain) - min(plain) <= 1
    segs = {c: shares_walk(tiles, 132, c, start=3) for c in range(132)}
    check_batch(tiles, 132, start=3)
    work = {c: sum(t1 - t0 for (_, t0, t1, _, _) in s) for c, s in segs.items()}
    starts = {c: sum(1 for (_, _, _, _, p) in s if p) for c, s in segs.items()}
    many = [work[c] for c in segs if starts[c] >= 1]
    few = [work[c] for c in segs if starts[c] == 0]
    assert many and few and np.median(many) + 2 <= np.median(few)


def test_an_even_batch_runs_whole_sequences_and_a_ragged_one_equal_shares():
    """128 sequences of 128 tiles on 132 CTAs: equal shares would be 125 tiles with a
    cut in nearly every share; the aligned cut runs each sequence whole in its own CTA
    (no partial, no combine work).  8 sequences: 16 pieces each, as split mode's P=16.
    A ragged batch (one long sequence) takes the equal cut."""
    segs = check_batch([128] * 128, 132)
    assert shares_plan([128] * 128, 132) == (128, 128, 1)
    assert all(t0 == 0 and t1 == 128 and parts == 1 for (_, t0, t1, _, parts) in segs)
    assert shares_plan([128] * 8, 132) == (128, 128, 16)
    ragged = [128] * 100 + [2000]
    assert shares_plan(ragged, 132)[2] == 0
    check_batch(ragged, 132)


@pytest.mark.parametrize("seed", range(40))
def test_near_even_batches_cover_every_tile_once(seed):
    """Lengths within a few tiles of each other, empty sequences among them: the
    aligned cut (pieces of unequal sizes, shares holding only empty pieces)."""
    rng = np.random.default_rng(1000 + seed)
    batch = int(rng.integers(1, 300))
    base = int(rng.choice([1, 3, 16, 128, 400]))
    tiles = [int(x) for x in base + rng.integers(0, 4, size=batch)]
    for u in rng.choice(batch, size=int(rng.integers(0, min(batch, 5) + 1)), replace=False):
        tiles[u] = 0
    if not any(tiles):
        tiles[0] = 1
    for grid in (1, 2, 7, 132, 1000):
        check_batch(tiles, grid)


# ---- the dispatcher's choice (no GPU: testing.stub_device) ----
from mla_cupy import PagedKVCollection, ScalarArgs, abi, generic_flare_mla_decode_kv_cache_ragged  # noqa: E402
from mla_cupy.testing import FakeCudaArray as F  # noqa: E402
from mla_cupy.testing import stub_device  # noqa: E402
from mla_cupy.render import launch_config  # noqa: E402
from mla_cupy.variants import parse  # noqa: E402

B, T = 3, 3


def _launch(num_heads, chosen=True, page_size=64, num_partitions=2, max_cache_length=200, **kw):
    with stub_device() as launches:
        kv = PagedKVCollection(F((5, 1, page_size, 576), "bfloat16"), F((B, 4), np.int32), F((B,), np.int32),
                               page_size, max_cache_length=max_cache_length)
        generic_flare_mla_decode_kv_cache_ragged(
            q=F((T, num_heads, 576), "bfloat16"), input_row_offsets=F((B + 1,), np.int32), kv_collection=kv,
            layer_idx=0, scale=0.1, output=F((T, num_heads, 512), "bfloat16"),
            scalar_args_buf=ScalarArgs(F((3,), np.int64), B, 1, num_partitions, split_chosen=chosen), **kw)
        return list(launches)


def test_the_narrow_kernel_takes_equal_shares_when_the_split_is_its_to_choose(monkeypatch):
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    decode, combine = _launch(16)
    assert decode.kernel_name.endswith("_m16_hopper_narrow_evict_first") and decode.grid == (1, 132, 1)
    slot = decode.slots
    assert slot[abi.DECODE.slot("segment_ctas")] == 132 and slot[abi.DECODE.slot("host_batch")] == B
    # seg_info: in the lse workspace's tail, after (G + B - 1) partials of 16 rows
    lse_part = slot[abi.DECODE.slot("lse_part")]
    assert slot[abi.DECODE.slot("seg_info")] == lse_part + 4 * (132 + B - 1) * 16
    assert combine.slots[abi.COMBINE.slot("seg_info")] == slot[abi.DECODE.slot("seg_info")]
    assert combine.slots[abi.COMBINE.slot("segment_rows")] == 16 and combine.programmatic


# B sequences of at most max_cache_length + 1 keys over 132 shares: 16 tiles a share at
# most up to 45055 cached keys (3 x 704 tiles = 132 x 16), 17 from 45056
@pytest.mark.parametrize("max_cache_length, twin", [(200, True), (45055, True), (45056, False), (1 << 20, False)])
def test_short_shares_take_the_narrow_kernels_evict_first_twin(monkeypatch, max_cache_length, twin):
    """compiler.takes_evict_first: a segment-mode share of at most 16 tiles (the host's
    bound from max_cache_length) runs the `_evict_first` twin, a longer one the plain
    kernel; the launch is otherwise the same."""
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    decode, _ = _launch(16, max_cache_length=max_cache_length)
    assert decode.kernel_name.endswith("_m16_hopper_narrow" + ("_evict_first" if twin else ""))
    assert decode.grid == (1, 132, 1) and decode.slots[abi.DECODE.slot("segment_ctas")] == 132


def test_the_evict_first_twin_needs_segment_mode(monkeypatch):
    """Splits (a caller's num_partitions_in here) keep the plain narrow kernel, however short."""
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    decode, _ = _launch(16, num_partitions_in=2)
    assert decode.kernel_name.endswith("_m16_hopper_narrow") and decode.slots[abi.DECODE.slot("segment_ctas")] == 0


def test_the_portable_backend_never_takes_the_evict_first_twin(monkeypatch):
    """MLA_CUPY_BACKEND=portable on the short batch that takes the twin on Hopper: a
    portable kernel, no `_evict_first` (the twin is a Hopper narrow key only)."""
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    monkeypatch.setenv("MLA_CUPY_BACKEND", "portable")
    decode, _ = _launch(16, max_cache_length=200)
    assert "_hopper" not in decode.kernel_name and not decode.kernel_name.endswith("_evict_first"), \
        decode.kernel_name


@pytest.mark.parametrize("num_heads, schedule, twin", [(128, None, True), (128, "seesaw", True), (96, None, False),
                                                       (64, "seesaw", False), (128, "ring", False)])
def test_the_seesaw_takes_its_multicast_twin_where_tokens_fill_tile_pairs(monkeypatch, num_heads, schedule, twin):
    """compiler.takes_multicast: the seesaw's `_multicast` twin (clusters of two row tiles)
    where a token's heads fill whole pairs of 64-row tiles (h 128), so both CTAs of a
    cluster hold one token's rows (splits of 512 tiles here); h 96 (a 64- and a 32-row tile), or h 64 with the seesaw
    forced (one tile a token), keep the plain seesaw; the ring never has the twin.  The
    grid is the plain kernel's (its x, the row tiles, even)."""
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    if schedule:
        monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", schedule)
    else:
        monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    decode, _ = _launch(num_heads, chosen=False, max_cache_length=1 << 16)   # (chosen: segment mode)
    assert decode.kernel_name.endswith("_multicast") == twin, decode.kernel_name
    if twin:
        plain = decode.kernel_name.removesuffix("_multicast")
        assert plain.endswith("_hopper_seesaw") and decode.grid[0] % 2 == 0, (decode.kernel_name, decode.grid)


# P=2 splits of at most max_cache_length + 1 keys: 31 tiles a split up to 3967 cached keys
# (31 x 128 = 3968 keys), 32 from 3968
@pytest.mark.parametrize("max_cache_length, twin", [(200, False), (3967, False), (3968, True), (1 << 20, True)])
def test_short_splits_keep_the_plain_seesaw(monkeypatch, max_cache_length, twin):
    """compiler.takes_multicast: a split (the host's P over the longest sequence) of fewer
    than MULTICAST_MIN_SPLIT_TILES 64-key tiles runs the plain seesaw at h 128, where a
    cluster's start and end cost more than the shared copies save; the launch is
    otherwise the same."""
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    decode, _ = _launch(128, chosen=False, max_cache_length=max_cache_length)
    assert decode.kernel_name.endswith("_hopper_seesaw" + ("_multicast" if twin else "")), decode.kernel_name
    plain, _ = _launch(128, chosen=False, max_cache_length=200)
    assert decode.grid == plain.grid, (decode.grid, plain.grid)


def test_the_multicast_twin_takes_segment_mode_where_the_split_is_its_to_choose(monkeypatch):
    """dispatch.segment_ctas: under MLA_CUPY_SPLIT=segments (auto keeps the balanced splits:
    against them the twin is ~1% faster on ragged batches, ~2% slower on even ones,
    NOTES.md session 40), h 128 at s_q 1 (a sequence's rows fill a
    cluster's two row tiles), D_QK 576, the null or causal mask and a split the dispatcher
    chose run the `_segments` twin: grid (2, SMs / 2, 1), one cluster a share; partials of
    128 rows (seg_info after (shares + B - 1) of them), the combine told so; its shared
    memory the launch_config of the twin (the walks).  The host's P, a window or
    MLA_CUPY_SPLIT=partitions keep the splits."""
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    auto, _ = _launch(128, max_cache_length=1 << 16)
    assert auto.kernel_name.endswith("_hopper_seesaw_multicast"), auto.kernel_name
    monkeypatch.setenv("MLA_CUPY_SPLIT", "segments")
    decode, combine = _launch(128)
    assert decode.kernel_name.endswith("_hopper_seesaw_multicast_segments") and decode.grid == (2, 66, 1), \
        (decode.kernel_name, decode.grid)
    key = parse(decode.kernel_name)
    assert decode.smem == launch_config(key).smem_bytes > launch_config(
        dataclasses.replace(key, segments=False)).smem_bytes
    slot = decode.slots
    assert slot[abi.DECODE.slot("segment_ctas")] == 66 and slot[abi.DECODE.slot("host_batch")] == B
    lse_part = slot[abi.DECODE.slot("lse_part")]
    assert slot[abi.DECODE.slot("seg_info")] == lse_part + 4 * (66 + B - 1) * 128
    assert combine.slots[abi.COMBINE.slot("segment_rows")] == 128
    null, _ = _launch(128, mask_str="null")
    assert null.kernel_name.endswith("_null_dense_fold0_hopper_seesaw_multicast_segments"), null.kernel_name
    split, _ = _launch(128, chosen=False, max_cache_length=1 << 16)
    assert split.kernel_name.endswith("_hopper_seesaw_multicast") and split.grid == (2, 2, B), split.kernel_name
    window, _ = _launch(128, mask_str="sliding_window_causal", local_window_size=100)
    assert "_segments" not in window.kernel_name, window.kernel_name
    monkeypatch.setenv("MLA_CUPY_SPLIT", "partitions")
    parts, _ = _launch(128)
    assert "_segments" not in parts.kernel_name, parts.kernel_name


def test_the_portable_backend_never_takes_the_multicast_twin(monkeypatch):
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    monkeypatch.setenv("MLA_CUPY_BACKEND", "portable")
    decode, _ = _launch(128, max_cache_length=1 << 16)
    assert "_hopper" not in decode.kernel_name and "_multicast" not in decode.kernel_name, decode.kernel_name


@pytest.mark.parametrize("num_partitions", [1, 2, 16, 64])
def test_the_segment_combine_has_threads_for_the_split_the_host_chose(monkeypatch, num_partitions):
    """An even batch's aligned cut gives a sequence about the host's P pieces (16 for
    8 sequences of 8K keys): the combine block holds as many partials' groups as a
    split combine of that P would, and no fewer than two partials' worth."""
    from mla_cupy.render import COMBINE_GROUP_THREADS, combine_shape, combine_threads
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    decode, combine = _launch(16, num_partitions=num_partitions)
    assert decode.grid == (1, 132, 1)
    _, grid, block = combine_shape(max(2, num_partitions), 16, T)
    assert combine.block == tuple(block) + (1,) * (3 - len(block)) and combine.grid[:2] == grid
    assert combine_threads(16) > combine_threads(2)
    # few partials: a warp a row, eight rows a CTA, the _warp_rows kernel; many: a CTA a row
    warp_rows = combine_threads(max(2, num_partitions)) == COMBINE_GROUP_THREADS
    assert (combine.block[0] == 32) == warp_rows
    assert combine.kernel_name == "mla_combine_bf16" + ("_warp_rows" if warp_rows else "")


@pytest.mark.parametrize("heads", [16, 64])
@pytest.mark.parametrize("case", ["given split", "env partitions", "num_partitions_in"])
def test_splits_stay_where_segment_mode_does_not_apply(monkeypatch, case, heads):
    """A split the caller chose, MLA_CUPY_SPLIT=partitions, num_partitions_in: the P
    splits of grid y, for the narrow kernel (16 heads) and the ring (64 heads: no
    balanced splits either)."""
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    kw, chosen = {}, True
    if case == "given split":
        chosen = False
    elif case == "env partitions":
        monkeypatch.setenv("MLA_CUPY_SPLIT", "partitions")
    else:
        kw = dict(num_partitions_in=2)
    decode = _launch(heads, chosen, **kw)[-2]
    assert decode.grid[1:] == (2, B) and decode.slots[abi.DECODE.slot("segment_ctas")] == 0
    assert decode.slots[abi.DECODE.slot("seg_info")] == 0 and decode.slots[abi.DECODE.slot("split_len")] == 0


@pytest.mark.parametrize("num_partitions", [1, 3])
def test_the_ring_takes_equal_shares_when_the_split_is_its_to_choose(monkeypatch, num_partitions):
    """The ring (64 heads) over a bf16 cache, a batch of B > 1: segment mode, as the
    narrow kernel's, its partials 64 rows each, the combine sized for the host's P."""
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    decode, combine = _launch(64, num_partitions=num_partitions)
    assert decode.kernel_name.endswith("_hopper") and decode.grid == (1, 132, 1)
    slot = decode.slots
    assert slot[abi.DECODE.slot("segment_ctas")] == 132 and slot[abi.DECODE.slot("split_len")] == 0
    assert slot[abi.DECODE.slot("seg_info")] == slot[abi.DECODE.slot("lse_part")] + 4 * (132 + B - 1) * 64
    assert combine.slots[abi.COMBINE.slot("seg_info")] == slot[abi.DECODE.slot("seg_info")]
    assert combine.slots[abi.COMBINE.slot("segment_rows")] == 64 and combine.programmatic


@pytest.mark.parametrize("num_partitions", [1, 3])
def test_the_seesaw_takes_balanced_splits_when_the_split_is_its(monkeypatch, num_partitions):
    """Balanced mode (docs/spec.md section 7): a budget of B x P splits as a negative
    split_len, BALANCED_GRID_FACTOR x P of grid y, the combine over every row in
    segment form (partial p of token t's head h at row p T H + t H + h: segment_rows
    T x H) from the seg_info in the lse workspace's tail, even at P = 1."""
    from mla_cupy.dispatch import BALANCED_GRID_FACTOR
    from mla_cupy.render import combine_shape
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    heads = 96   # (h 128 at s_q 1: the `_segments` twin's segment mode)
    decode, combine = _launch(heads, num_partitions=num_partitions, max_cache_length=1 << 16)
    grid_y = BALANCED_GRID_FACTOR * num_partitions
    assert decode.kernel_name.endswith("_hopper_seesaw") and decode.grid[1:] == (grid_y, B)
    slot = decode.slots
    # (an int parameter's slot holds its 32 bits)
    assert slot[abi.DECODE.slot("split_len")] == (-B * num_partitions) & 0xffffffff
    assert slot[abi.DECODE.slot("segment_ctas")] == 0
    assert slot[abi.DECODE.slot("seg_info")] == slot[abi.DECODE.slot("lse_part")] + 4 * grid_y * T * heads
    assert combine.slots[abi.COMBINE.slot("seg_info")] == slot[abi.DECODE.slot("seg_info")]
    assert combine.slots[abi.COMBINE.slot("segment_rows")] == T * heads
    assert combine.slots[abi.COMBINE.slot("num_partitions_in")] == grid_y
    warp_rows, grid, block = combine_shape(grid_y, heads, T)
    assert combine.block[:len(block)] == block and combine.grid[:2] == grid
    assert combine.kernel_name.endswith("_warp_rows") == warp_rows


@pytest.mark.parametrize("heads", [1, 3, 5])
def test_seg_info_is_16_byte_aligned_whatever_the_rows(monkeypatch, heads):
    """seg_info's int4 records follow the partial rows in the lse workspace: with an odd
    T x H (one head, pages TMA cannot load, the ring's balanced splits at P = 1 until
    session 33) that offset was not a multiple of 16 bytes, and the kernels' int4
    stores faulted with a misaligned address on the H200 (session 17).  The ring takes
    segment mode there now, (G + B - 1) x 64 rows of partials: on a boundary too."""
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    decode, combine = _launch(heads, page_size=3, num_partitions=1)
    slot = decode.slots
    assert decode.kernel_name.endswith("_hopper") and decode.grid[1] == 132, (decode.kernel_name, decode.grid)
    lse_part, seg_info = slot[abi.DECODE.slot("lse_part")], slot[abi.DECODE.slot("seg_info")]
    assert seg_info % 16 == 0 and seg_info - lse_part >= 4 * 2 * T * heads
    assert combine.slots[abi.COMBINE.slot("seg_info")] == seg_info


@pytest.mark.parametrize("heads", [1, 3, 7, 20, 33, 64, 128])
@pytest.mark.parametrize("page_size", [3, 16, 64])
@pytest.mark.parametrize("num_partitions", [1, 2, 3])
def test_every_seg_info_lies_on_a_16_byte_boundary(monkeypatch, heads, page_size, num_partitions):
    """Whichever schedule and split a launch takes (segment mode, balanced splits, P
    splits), a seg_info it passes lies on a 16-byte boundary of the lse workspace, after
    every partial row, and the combine reads the same one."""
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    launches = _launch(heads, page_size=page_size, num_partitions=num_partitions)
    decode = launches[0]
    seg_info = decode.slots[abi.DECODE.slot("seg_info")]
    if seg_info:
        assert seg_info % 16 == 0, (decode.kernel_name, decode.grid, seg_info)
        assert seg_info - decode.slots[abi.DECODE.slot("lse_part")] >= 4 * decode.grid[1] * T * heads \
            or decode.slots[abi.DECODE.slot("segment_ctas")], decode.kernel_name
        assert launches[1].slots[abi.COMBINE.slot("seg_info")] == seg_info


def test_a_bad_split_choice_is_an_error_before_any_launch(monkeypatch):
    monkeypatch.setenv("MLA_CUPY_SPLIT", "shares")
    with pytest.raises(ValueError, match="MLA_CUPY_SPLIT: expected one of"):
        _launch(16)
