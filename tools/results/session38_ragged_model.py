"""A model of the seesaw twin's DeepSeek h=128 ragged row (session 38): where its time goes
and what a persistent schedule could give.  CPU only:

    PYTHONPATH=. python3 tools/results/session38_ragged_model.py

Inputs measured on the H200 in session 38 (call 5's phase probe of the `_multicast` twin,
tools/results/2026-12-04i_h200_session38_call5_log.txt): 1.685 us a 64-key tile (wg0's loop
and peeled pair, median) and 17.1 us of each CTA outside its tile loop; 66 clusters of two
SMs.  The row's lengths are the bench's (mla_cupy.bench.case_named).  A cluster slot takes
the next piece in launch order when it frees (the kernel's longest-first ranking; a
sequence's pieces consecutive), a piece costs the fixed part plus its tiles.

Checks against the GPU (bench / probe, us): even splits 2 / 3 / 4 a sequence -> 261-268 /
281 / 296; the model 267 / 282 / 304.  Persistent chunks (every slot the batch's tiles / 66,
contiguous across sequences) pay the fixed part once plus a boundary cost B a sequence
crossed: the question for a persistent twin is how small B gets.
"""
import heapq

import numpy as np

from mla_cupy.bench import case_named

TILE_US, FIXED_US, SLOTS, BLOCK_N = 1.685, 17.1, 66, 64


def tiles(lo: int, hi: int) -> int:
    """64-key tiles a piece [lo, hi) of a sequence spans (tiles start on multiples of 64)."""
    return -(-hi // BLOCK_N) - lo // BLOCK_N


def makespan(pieces) -> float:
    """The last slot's end when slots take `pieces` (tiles each) in order as they free."""
    ends = [0.0] * SLOTS
    last = 0.0
    for t in pieces:
        start = heapq.heappop(ends)
        end = start + FIXED_US + t * TILE_US
        last = max(last, end)
        heapq.heappush(ends, end)
    return last


def even_pieces(lengths, order, k: int):
    out = []
    for b in order:
        n = int(lengths[b])
        per = -(-n // k)
        out += [tiles(i * per, min(n, (i + 1) * per)) for i in range(k) if i * per < n]
    return out


def persistent(lengths, boundary_us: float) -> float:
    """The longest slot when each of SLOTS takes a contiguous chunk of the batch's tiles."""
    seq_tiles = np.array([tiles(0, int(n)) for n in lengths])
    starts = np.concatenate([[0], np.cumsum(seq_tiles)])
    total = int(starts[-1])
    per = -(-total // SLOTS)
    worst = 0.0
    for s in range(SLOTS):
        a, e = s * per, min(total, (s + 1) * per)
        crossed = int(np.searchsorted(starts, e, "left") - np.searchsorted(starts, a, "right"))
        worst = max(worst, FIXED_US + (e - a) * TILE_US + crossed * boundary_us)
    return worst


def main():
    lengths = case_named("ds_h128_sq1_ragged").key_counts()   # every key a sequence sees, its own included
    order = np.argsort(-lengths, kind="stable")
    print(f"64 sequences, {lengths.min()}..{lengths.max()} keys (mean {lengths.mean():.0f})")
    for k in (1, 2, 3, 4):
        print(f"  even splits, {k} a sequence: {makespan(even_pieces(lengths, order, k)):6.1f} us")
    for b in (0, 3, 6, 12, 17.1):
        print(f"  persistent chunks, {b:4.1f} us a boundary: {persistent(lengths, b):6.1f} us")


if __name__ == "__main__":
    main()
