"""The fp8 producer's bulk-copy runs (issue_raw in kernels/hopper/mla_decode_wgmma.cu.j2),
modelled lane by lane as the kernel computes them for dense caches (sparse copies each
key on its own: its indices rarely run): in each warp the copying lanes
(its eight keys that are not masked) split into runs of records that follow each other
in the cache; each run's first lane copies the whole run.  Every copied key must be in
exactly one run, a run must not cross a gap in the cache or a masked key, and a dense
tile inside a page must be one copy a warp."""
import numpy as np
import pytest

ROW_BYTES = 656
FULL = 0xFFFFFFFF


def runs(warp, valid, rows):
    """(first lane, lane after the last) of each copy warp `warp` issues; valid and rows
    are the 32 keys of the tile (lane n of each warp holds key n)."""
    copy = [lane // 8 == warp and valid[lane] for lane in range(32)]
    copies = sum(1 << lane for lane in range(32) if copy[lane])
    starts = []
    for lane in range(32):
        prev_row = rows[lane - 1] if lane > 0 else rows[lane]   # __shfl_up_sync keeps lane 0's own
        joins = lane > 0 and (copies >> (lane - 1)) & 1 and prev_row + ROW_BYTES == rows[lane]
        starts.append(copy[lane] and not joins)
    run_starts = sum(1 << lane for lane in range(32) if starts[lane])
    out = []
    for lane in range(32):
        if starts[lane]:
            later = 0 if lane == 31 else (FULL << (lane + 1)) & FULL
            stops = (run_starts | (~copies & FULL)) & later
            end = (stops & -stops).bit_length() - 1 if stops else 32   # __ffs(stops) - 1
            out.append((lane, end))
    return out


def check(valid, rows):
    for warp in range(4):
        got = runs(warp, valid, rows)
        covered = [n for a, b in got for n in range(a, b)]
        assert sorted(covered) == [n for n in range(8 * warp, 8 * warp + 8) if valid[n]]
        for a, b in got:
            assert all(rows[n + 1] == rows[n] + ROW_BYTES for n in range(a, b - 1))
    return sum(len(runs(w, valid, rows)) for w in range(4))


def test_a_dense_tile_inside_a_page_is_one_copy_a_warp():
    rows = [10_000_000 + n * ROW_BYTES for n in range(32)]
    assert check([True] * 32, rows) == 4


@pytest.mark.parametrize("page_size", [1, 3, 16, 64])
def test_dense_tiles_across_pages_and_split_ends(page_size):
    rng = np.random.default_rng(page_size)
    for _ in range(200):
        pages = rng.permutation(1000)
        first = int(rng.integers(0, 4 * page_size))
        keys = range(first, first + 32)
        rows = [int(pages[u // page_size]) * 64 * ROW_BYTES + (u % page_size) * ROW_BYTES for u in keys]
        lo, hi = sorted(rng.integers(0, 33, size=2))
        valid = [lo <= n < hi for n in range(32)]
        check(valid, rows)


def test_runs_stop_at_every_gap_and_masked_key():
    rng = np.random.default_rng(0)
    for _ in range(500):
        idx = rng.integers(0, 5000, size=32)
        if rng.random() < 0.5:   # some indices run consecutively
            idx = np.sort(idx) if rng.random() < 0.5 else np.arange(32) + idx[0]
        valid = list(rng.random(32) < 0.8)
        rows = [int(i) * ROW_BYTES for i in idx]
        check(valid, rows)
