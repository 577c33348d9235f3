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

    PYTHONPATH=.:tests python3 tools/ring_probe.py [CASE[:P] ...] [--name VARIANT]
"""
import argparse
import os
import sys

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
from phase_probe import SLOTS, insert, install, stamped_calls  # noqa: E402

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
    src = render(parse(name))
    src = src.replace('extern "C" __global__', f'__device__ unsigned long long g_prof[8192][{SLOTS}];\n'
                      'extern "C" __global__', 1)
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
    args = ap.parse_args()
    prof = install(args.name, instrumented_source(args.name))
    for name, p, a in stamped_calls(args.cases, prof):
        report(name, p, a)


if __name__ == "__main__":
    main()
