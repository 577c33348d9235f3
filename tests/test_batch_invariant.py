"""batch_invariant=True on the host (CPU): the work of every CTA of a sequence
(its query rows and its key range, as the decode kernels compute them from the
launch) depends on that sequence alone.  The GPU side (bit-identical out and
lse) is tests/test_gpu_hardening.py."""
from __future__ import annotations

import math

import numpy as np
import pytest
from hypothesis import assume, given, strategies as st

from mla_cupy import scalar_args as SA
from mla_cupy.schedule import BATCH_INVARIANT_SPLIT_KEYS, KEYS_PER_TILE, row_tiling


def cta_work(seq_len, cache_len, num_heads, tiling, num_partitions, *, page_size, mask="causal",
             window=0, sparse_slots=None, split_len=0):
    """{(x, y): (rows, (lo, hi))} for the CTAs of one sequence that compute rows:
    the kernels' cta_rows and split_keys (portable mla_decode.cu.j2, and the
    Hopper kernel's identical dense rule), transcribed.  ``sparse_slots``: k_b
    of a sparse sequence without extra slots (None: dense); ``split_len`` as the
    kernels' argument.  CTAs whose key range is empty (they only mark their
    partial empty) are left out; every key of the axis must fall in some split."""
    work = {}
    for x in range(tiling.grid_x):
        g = x // tiling.group_tiles
        r0 = g * tiling.group_rows + (x % tiling.group_tiles) * tiling.tile_rows
        row_end = min(r0 + tiling.tile_rows, (g + 1) * tiling.group_rows, seq_len * num_heads)
        if r0 >= row_end:
            continue
        tok_first, tok_last = r0 // num_heads, (row_end - 1) // num_heads
        for y in range(num_partitions):
            if sparse_slots is not None:
                axis_lo, axis_hi, granule = 0, sparse_slots, KEYS_PER_TILE
            else:
                axis_lo = max(0, cache_len - window + 1) if mask == "sliding_window_causal" else 0
                granule = page_size if page_size >= KEYS_PER_TILE else \
                    page_size * math.ceil(KEYS_PER_TILE / page_size)
                axis_lo -= axis_lo % granule
                axis_hi = cache_len + seq_len
            even = math.ceil(math.ceil((axis_hi - axis_lo) / granule) / num_partitions)
            per_split = max(math.ceil(split_len / granule), even) if split_len else even
            lo = axis_lo + y * per_split * granule
            hi = min(axis_hi, lo + per_split * granule)
            if y == num_partitions - 1:
                assert axis_lo + num_partitions * per_split * granule >= axis_hi, "keys past the last split"
            if sparse_slots is None and mask != "null":
                hi = min(hi, cache_len + tok_last + 1)
            if sparse_slots is None and mask == "sliding_window_causal":
                lo = max(lo, cache_len + tok_first - window + 1)
            if hi > lo:
                work[(x, y)] = ((r0, row_end), (lo, hi))
    return work


class _HostBuffer(np.ndarray):
    def set(self, host, stream=None):
        self[...] = host


@pytest.fixture(scope="module")
def no_upload():
    """pack_scalar_args without a GPU: the buffer stays on the host."""
    import cupy
    mp = pytest.MonkeyPatch()
    mp.setattr(cupy, "asarray", lambda a: np.asarray(a).view(_HostBuffer))
    yield
    mp.undo()


def _plan(batch_seq_lens, max_cache, num_heads, *, batch_invariant, per_token=False, **kw):
    q_max = max(batch_seq_lens)
    sa = SA.pack_scalar_args(len(batch_seq_lens), q_max, max_cache, num_heads,
                             batch_invariant=batch_invariant, **kw)
    return row_tiling(q_max, num_heads, per_token=per_token, batch_invariant=batch_invariant), sa


@given(seq_len=st.integers(1, 6), cache_len=st.integers(0, 20000), num_heads=st.integers(1, 128),
       others=st.lists(st.tuples(st.integers(0, 8), st.integers(0, 100000)), min_size=1, max_size=70),
       page_size=st.sampled_from([1, 7, 64]),
       mask=st.sampled_from(["null", "causal", "sliding_window_causal"]), window=st.integers(1, 3000),
       sparse=st.booleans(), fold=st.booleans())
def test_a_sequence_computes_the_same_work_alone_and_in_any_batch(
        no_upload, seq_len, cache_len, num_heads, others, page_size, mask, window, sparse, fold):
    if sparse and mask == "sliding_window_causal":
        mask = "causal"
    per_token = sparse and not fold
    kw = dict(sparse_mla=sparse, indices_stride=512 if sparse else 0, fold_shared_index=sparse and fold,
              window=window if mask == "sliding_window_causal" else None)
    slots = min(512, cache_len + seq_len) if sparse else None
    works = []
    for lens, max_cache in (([seq_len], cache_len),
                            ([seq_len] + [s for s, _ in others], max([cache_len] + [c for _, c in others]))):
        tiling, sa = _plan(lens, max_cache, num_heads, batch_invariant=True, per_token=per_token, **kw)
        assert sa.batch_invariant and sa.split_len == BATCH_INVARIANT_SPLIT_KEYS and sa.num_partitions >= 2
        works.append(cta_work(seq_len, cache_len, num_heads, tiling, sa.num_partitions,
                              page_size=page_size, mask=mask, window=window, sparse_slots=slots,
                              split_len=sa.split_len))
    assert works[0] == works[1]


def test_without_batch_invariant_the_work_depends_on_the_batch(no_upload):
    """The control: the default plan tiles rows by q_max_seq_len and splits by the
    batch, so the model above can tell the difference."""
    works = []
    for lens, max_cache in (([1], 8000), ([1] + [4] * 63, 8000)):
        tiling, sa = _plan(lens, max_cache, 16, batch_invariant=False)
        works.append(cta_work(1, 8000, 16, tiling, sa.num_partitions, page_size=64))
    assert works[0] != works[1]


def test_batch_invariant_tile_depends_on_the_heads_only():
    for q_max in (1, 2, 7, 64):
        for h, tile in ((1, 16), (16, 16), (20, 32), (64, 64), (128, 64)):
            assert row_tiling(q_max, h, per_token=False, batch_invariant=True).tile_rows == tile
    assert row_tiling(4, 16, per_token=False).tile_rows == 64   # the default packs 4 tokens


def test_pack_keeps_a_given_num_partitions_and_rejects_bad_flags(no_upload):
    assert SA.pack_scalar_args(3, 1, 100, 16, batch_invariant=True, num_partitions=5).num_partitions == 5
    assert SA.pack_scalar_args(3, 1, 100, 16).batch_invariant is False
    with pytest.raises(TypeError, match="^batch_invariant"):
        SA.pack_scalar_args(3, 1, 100, 16, batch_invariant="yes")


def test_update_keeps_the_flag(no_upload):
    sa = SA.pack_scalar_args(3, 2, 100, 16, batch_invariant=True).update(2)
    assert sa.batch_invariant and sa.buffer.tolist() == [2, 2, sa.num_partitions] and sa.split_len


# ---- balanced splits (split_len < 0, auto mode of the ring and seesaw; docs/spec.md §7) ----

def balanced_splits(keys, budget, grid_splits, granule):
    """Per sequence (keys C_b + S_b): (keys a split, splits that hold keys), as
    sequence.cuh.j2's balanced_split_len and keys.cuh.j2's split_keys compute them."""
    length = 1 if is_ragged(keys) else -(-sum(keys) // budget)
    out = []
    for k in keys:
        granules = -(-k // granule)
        per_split = max(-(-length // granule), -(-granules // grid_splits))
        out.append((per_split * granule, -(-granules // per_split)))
    return out


def is_ragged(keys):
    """balanced_split_len's rule: some sequence has more than 1/16 over the mean keys."""
    return 16 * max(keys) > 17 * -(-sum(keys) // len(keys))


@given(st.lists(st.integers(1, 200000), min_size=2, max_size=300), st.integers(1, 16),
       st.sampled_from([1, 16, 64, 128]))
def test_balanced_splits_cover_every_key(keys, host_p, page_size):
    """Every key of every sequence lies in one of its first `splits` splits, which grid y
    holds; no split is longer than the batch's mean share or the sequence's own even cut
    of grid y."""
    from mla_cupy.dispatch import BALANCED_GRID_FACTOR
    granule = page_size if page_size >= KEYS_PER_TILE else page_size * math.ceil(KEYS_PER_TILE / page_size)
    budget, grid = len(keys) * host_p, BALANCED_GRID_FACTOR * host_p
    mean = -(-sum(keys) // budget)
    for k, (per, n) in zip(keys, balanced_splits(keys, budget, grid, granule)):
        assert 1 <= n <= grid and n * per >= k and (n - 1) * per < k
        assert per <= max(-(-mean // granule), -(-(-(-k // granule)) // grid)) * granule


@given(st.integers(1, 200000), st.lists(st.floats(0, 1), min_size=2, max_size=300), st.integers(1, 16),
       st.sampled_from([1, 16, 64, 128]))
def test_balanced_splits_of_a_near_uniform_batch_follow_the_mean(base, spread, host_p, page_size):
    """Sequences within 1/16 of the mean split at the batch's mean keys over P: the
    splits add up to at most the budget plus one a sequence (where every sequence has
    grid y's granules: shorter ones take fewer)."""
    from mla_cupy.dispatch import BALANCED_GRID_FACTOR
    keys = [base + int(f * (base // 20)) for f in spread]   # at most 1/20 over the shortest
    assert not is_ragged(keys)
    granule = page_size if page_size >= KEYS_PER_TILE else page_size * math.ceil(KEYS_PER_TILE / page_size)
    budget, grid = len(keys) * host_p, BALANCED_GRID_FACTOR * host_p
    counts = balanced_splits(keys, budget, grid, granule)
    assert all(per == max(-(-(-(-sum(keys) // budget)) // granule), -(-(-(-k // granule)) // grid)) * granule
               for k, (per, _) in zip(keys, counts))
    if all(-(-k // granule) >= grid for k in keys):
        assert sum(n for _, n in counts) <= budget + len(keys)


@given(st.lists(st.integers(1, 200000), min_size=2, max_size=300), st.integers(1, 16),
       st.sampled_from([1, 16, 64, 128]))
def test_balanced_splits_of_a_ragged_batch_are_grid_y_even_cuts(keys, host_p, page_size):
    """A ragged batch (some sequence more than 1/16 over the mean) cuts every sequence
    into grid y's (2P's) even splits, or one a granule where it has fewer."""
    from mla_cupy.dispatch import BALANCED_GRID_FACTOR
    assume(is_ragged(keys))
    granule = page_size if page_size >= KEYS_PER_TILE else page_size * math.ceil(KEYS_PER_TILE / page_size)
    grid = BALANCED_GRID_FACTOR * host_p
    for k, (per, n) in zip(keys, balanced_splits(keys, len(keys) * host_p, grid, granule)):
        granules = -(-k // granule)
        assert per == -(-granules // grid) * granule and n == -(-granules // -(-granules // grid))


@given(st.integers(1, 200000), st.integers(2, 300), st.integers(1, 16), st.sampled_from([1, 16, 64]))
def test_balanced_splits_of_a_uniform_batch_are_the_host_split(keys, batch, host_p, page_size):
    """A batch of equal lengths gets, in every sequence, the splits the host's P gives."""
    from mla_cupy.dispatch import BALANCED_GRID_FACTOR
    granule = page_size if page_size >= KEYS_PER_TILE else page_size * math.ceil(KEYS_PER_TILE / page_size)
    granules = -(-keys // granule)
    host_per = -(-granules // host_p)
    counts = balanced_splits([keys] * batch, batch * host_p, BALANCED_GRID_FACTOR * host_p, granule)
    assert set(counts) == {(host_per * granule, -(-granules // host_per))}


def balanced_place(y, z, grid_y, grid_z, ragged, host_p):
    """(grid z, split) of the CTA at (y, z), as sequence.cuh.j2's balanced_place."""
    if ragged or host_p <= 0 or host_p >= grid_y:
        return z, y
    at, first = y + grid_y * z, host_p * grid_z
    if at < first:
        return at // host_p, at % host_p
    rest = grid_y - host_p
    return (at - first) // rest, host_p + (at - first) % rest


@given(st.integers(1, 300), st.integers(1, 16), st.integers(1, 3), st.booleans())
def test_balanced_place_runs_every_split_of_every_sequence_once(grid_z, host_p, factor, ragged):
    """Every (sequence, split) of the grid has one CTA; outside a ragged batch the first
    host_p x grid_z CTAs in launch order (y before z) take the host's P splits of every
    sequence, in batch order."""
    grid_y = factor * host_p
    order = [balanced_place(y, z, grid_y, grid_z, ragged, host_p) for z in range(grid_z) for y in range(grid_y)]
    assert sorted(order) == [(z, y) for z in range(grid_z) for y in range(grid_y)]
    if not ragged and factor > 1:
        assert order[:host_p * grid_z] == [(z, s) for z in range(grid_z) for s in range(host_p)]
