"""Per-CTA and per-segment times of the dense ring decode kernel on the GPU.

An instrumented copy of the ring kernel's rendered source (phase_probe.py's
machinery: %globaltimer stamps by thread 0 of warpgroup 0 into a __device__ array,
the copy put in the compiler's memo) runs bench cases, in split mode or, with
MLA_CUPY_SPLIT=segments, segment mode.  Stamps: kernel entry; for each of a CTA's
first SEGS segments its start (Q in shared memory: warpgroup 0's barrier after its Q
copies; the first segment's Q is the producer's, waited in its first S), the end of
its tile loop and the end of its epilogue, and the ring tiles run so far.

Printed per case: the kernel span, the CTAs' end times (min / median / max) and by
how many segments a CTA ran, the median time a ring tile takes (a segment's loop
over its tiles), a CTA's start (entry to its first loop), and a boundary (a loop's
end to the next segment's start: the row totals, the epilogue and the wait for the
next Q; the next segment's first tile then waits in its loop).

``--tile N``: %clock64 stamps (both math warpgroups of an SM share the clock) at each
hand-over of the first segment's tile N instead: warpgroup 0's step(N) (S(N + 1) queued,
P V_L(N) queued, S(N + 1) done, the softmax of N + 1 waiting for warpgroup 1 to free the P
slot, P(N + 1) published, P V_L(N) done, tile N released) and warpgroup 1's (P(N) taken,
P V_R(N) queued, done and released).  Prints each step's median cycles from warpgroup 0's
step entry and from the previous stamp of its warpgroup: where a tile's ~2450 clocks go.

    PYTHONPATH=.:tests python3 tools/ring_probe.py [CASE[:P] ...] [--name VARIANT] [--tile N]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from phase_probe import PER_WG, SLOTS, declare_stamps, insert, install, report_steps, stamp, stamped_calls  # noqa: E402

NAME = "mla_decode_bf16_causal_dense_fold0_hopper"
SEGS = 5                 # segments stamped a CTA: slots 1 + 3 s .. 3 + 3 s
TILES = 1 + 3 * SEGS     # slots TILES + s: ring tiles run after segment s


def _stamp(slot, cond="true"):
    return (f"if (({cond}) && threadIdx.x == 0) {{ unsigned long long _t; "
            f"asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(_t)); "
            f"g_prof[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)][{slot}] = _t; }}\n")


def instrumented_source(name):
    from mla_cupy.render import render
    from mla_cupy.variants import parse
    src = declare_stamps(render(parse(name)))
    src = insert(src, "    float2* sRow = reinterpret_cast<float2*>(smem + SMEM_ROW);\n", _stamp(0))
    src = insert(src, "            // Dense: visible keys [lo, hi) of the two fragment rows.", _stamp("1 + 3 * seg", f"seg < {SEGS}"),
                 before=True)
    src = insert(src, "\n            ring_base += num_tiles;\n",   # (warpgroup 0's: the producer's is indented deeper)
                 _stamp("2 + 3 * seg", f"seg < {SEGS}")
                 + f"if (seg < {SEGS} && threadIdx.x == 0) g_prof[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y"
                   f" * blockIdx.z)][{TILES} + seg] = ring_base + num_tiles;\n", before=True)
    src = insert(src, "write_seg_info(seg_info, g.tok0 + t, g.part, g.parts, t * num_heads);\n",
                 _stamp("3 + 3 * seg", f"seg < {SEGS}"))
    assert TILES + SEGS <= SLOTS
    return src


# (warpgroup, anchor (unique in the source), condition, label): a clock64 stamp after the
# anchor's last line, or before its first with a label starting "wait".  The softmax's j is
# the tile it exponentiates (step j's is j + 1); the loops' `seg` the segment.
TILE_STEPS = [
    (0, "                if (NEXT) issue_qk(j + 1, s_next);\n", "seg == 0 && j == {n}", "wait: step(N) entry"),
    (0, "                if (NEXT) issue_qk(j + 1, s_next);\n", "seg == 0 && j == {n}", "S(N+1) queued"),
    (0, "                issue_pv(p, kv_tile(j));\n", "seg == 0 && j == {n}", "P V_L(N) queued"),
    (0, "// groups retire in order: S(j + 1) has landed\n", "seg == 0 && j == {n}", "S(N+1) done"),
    (0, "                if (at(j) > 0) bar_sync(BAR_P_FREE);", "seg == 0 && j == {n} + 1", "wait: P slot free?"),
    (0, "                if (at(j) > 0) bar_sync(BAR_P_FREE);", "seg == 0 && j == {n} + 1", "P slot free"),
    (0, "                bar_arrive(BAR_P_READY);\n", "seg == 0 && j == {n} + 1", "P(N+1) published"),
    (0, "                wgmma_wait<0>();               // P V(j) is done\n", "seg == 0 && j == {n}", "P V_L(N) done"),
    (0, "                mbar_arrive(empty_bar(j));                   // tile j's buffer\n", "seg == 0 && j == {n}",
     "tile N released"),
    (1, "                take_p(p);\n", "seg == 0 && j == {n}", "wait: P(N)?"),
    (1, "                take_p(p);\n", "seg == 0 && j == {n}", "P(N) taken"),
    (1, "                issue_pv(p, kv_tile(j) + V_HALF_CHUNKS * KV_CHUNK_BYTES);\n", "seg == 0 && j == {n}",
     "P V_R(N) queued"),
    (1, "// warpgroup 1 is done with tile j\n", "seg == 0 && j == {n}", "P V_R(N) done, released"),
]


def tile_source(name, n):
    """Variant `name` rendered with TILE_STEPS' clock64 stamps for tile n, slot PER_WG *
    warpgroup + k."""
    from mla_cupy.render import render
    from mla_cupy.variants import parse
    src = declare_stamps(render(parse(name)))
    slot = {0: 0, 1: 0}
    for wg, anchor, cond, label in TILE_STEPS:
        assert src.count(anchor) == 1, (anchor, src.count(anchor))
        at = src.index(anchor)
        at = src.rfind("\n", 0, at) + 1 if label.startswith("wait") else src.index("\n", at + len(anchor) - 1) + 1
        src = src[:at] + stamp(slot[wg], "clock64", cond.format(n=n)) + src[at:]
        slot[wg] += 1
    assert max(slot.values()) <= PER_WG
    return src


def report_tile(name, p, a, n):
    a = a[(a[:, 0] > 0) & (a[:, PER_WG] > 0)]
    print(f"{name} P={p}: tile {n} of the first segment in {len(a)} CTAs (clock64; warpgroup 0's step entry = 0)")
    report_steps(a, [(wg, label) for wg, _, _, label in TILE_STEPS], 26)


def report(name, p, a):
    a = a[a[:, 3] > 0]                       # CTAs that ran a segment
    t0 = a[:, 0].min()
    segs = (a[:, 1:1 + 3 * SEGS:3] > 0).sum(axis=1)          # (at most SEGS stamped)
    last = np.array([a[i, 3 + 3 * (s - 1)] for i, s in enumerate(segs)])
    ends = (last - t0) / 1e3
    print(f"{name} P={p}: {len(a)} CTAs, kernel span {ends.max():.1f} us; ends min {ends.min():.1f} "
          f"median {np.median(ends):.1f} max {ends.max():.1f}")
    for s in sorted(set(segs)):
        m = segs == s
        print(f"   {m.sum():4d} CTAs of {s} segments: end median {np.median(ends[m]):.1f} max {ends[m].max():.1f}")
    ran = a[:, 1:1 + 3 * SEGS:3] > 0
    after = np.where(ran, a[:, TILES:TILES + SEGS], 0)                    # ring tiles after segment s
    tiles = np.diff(np.concatenate([np.zeros((len(a), 1), np.int64), after], axis=1), axis=1)
    loop = (a[:, 2:2 + 3 * SEGS:3] - a[:, 1:1 + 3 * SEGS:3]) / 1e3
    ran &= tiles > 0
    per_tile = loop[ran] / tiles[ran]
    start = (a[:, 1] - a[:, 0]) / 1e3
    print(f"   us a ring tile (a loop / its tiles): median {np.median(per_tile):.3f} "
          f"[{np.percentile(per_tile, 5):.3f}, {np.percentile(per_tile, 95):.3f}]; "
          f"entry -> first loop median {np.median(start):.2f} max {start.max():.2f}")
    epi = (a[:, 3:3 + 3 * SEGS:3] - a[:, 2:2 + 3 * SEGS:3]) / 1e3
    print(f"   loop end -> epilogue done: median {np.median(epi[ran]):.2f} max {epi[ran].max():.2f} us")
    b = []
    for s in range(SEGS - 1):
        m = (a[:, 1 + 3 * (s + 1)] > 0)
        b.extend((a[m, 1 + 3 * (s + 1)] - a[m, 2 + 3 * s]) / 1e3)
    if b:
        b = np.array(b)
        print(f"   boundaries: {len(b)}, loop end -> next segment's Q in: median {np.median(b):.2f} "
              f"p95 {np.percentile(b, 95):.2f} max {b.max():.2f} us")
    order = np.argsort(ends)[-5:]
    print("   last CTAs to end (segments, tiles, end): " + "; ".join(
        f"{segs[i]} {after[i, min(segs[i], SEGS) - 1]} {ends[i]:.1f}" for i in order))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", default=["ds_h64_sq1_ragged", "ds_h64_sq1_uniform"])
    ap.add_argument("--name", default=NAME, help="the ring variant the cases launch")
    ap.add_argument("--tile", type=int, default=None, help="stamp the hand-overs of this tile instead")
    args = ap.parse_args()
    prof = install(args.name, instrumented_source(args.name) if args.tile is None else tile_source(args.name, args.tile))
    for name, p, a in stamped_calls(args.cases, prof):
        if args.tile is None:
            report(name, p, a)
        else:
            report_tile(name, p, a, args.tile)


if __name__ == "__main__":
    main()
