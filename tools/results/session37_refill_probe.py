"""Session 37 call 4: how long a half of a seesaw buffer takes from its release to its
refill landing.  On top of phase_probe --pair 3's stamps (clock64, the same SM), each
loading warp's lane 0 stamps, for the tiles of pair 4 (8 in buffer 0, 9 in buffer 1):
its empty mbarrier passed, its boxes issued, and the last chunk of its half landed (the
whole warp waits on that chunk's full mbarrier after the issue; its next work, tile + 2,
waits for a release a pair later).  Releases come from the pair stamps: tile 8's left half
when warpgroup 0 releases a (slot "a's left half released"), its right half at warpgroup
1's "P(a)'V_R(a) done", tile 9's left half at "P(b)V_L(b) done", its right at "P(b)V_R(b)
done".  Clocks from warpgroup 0's pair-3 entry.  Run from a tree's root: PYTHONPATH=.:tests
[MLA_CUPY_HOPPER_SCHEDULE=seesaw] python3 tools/results/session37_refill_probe.py CASE..."""
import os
import sys

import numpy as np

sys.path.insert(0, "tools")
import phase_probe as pp  # noqa: E402

BASE = 2 * pp.PER_WG     # warpgroup 2's slots: 4 a loading warp


def stamp(k):
    return (f"if ((tile == 8 || tile == 9) && lane == 0) {{ unsigned long long _t; "
            f"asm volatile(\"mov.u64 %0, %%clock64;\" : \"=l\"(_t)); "
            f"g_prof[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)][{BASE} + 4 * warp + {k}] = _t; }}\n")


def instrument(name):
    src = pp.instrumented_source(3, name=name)
    src = pp.insert(src, "            if (tile >= NUM_STAGES) mbar_wait(empty_bar(tile, half), parity(tile - NUM_STAGES));\n",
                    stamp(0))
    src = pp.insert(src, "            // The next tile of this buffer into L2", stamp(1), before=True)
    src = pp.insert(src, "            page = next;\n",
                    "            if (tile == 8 || tile == 9) mbar_wait(mbar(tile, c0 + nc - 1), parity(tile));\n" + stamp(2),
                    before=True)
    # call 5: lane 0 of the loading warps of buffer 0 (tile 8) stamps after its expect_tx
    # arrivals and the warp's __syncwarp, then after each of its box copies: slots 48 + 8 half + k
    TMA = 3 * pp.PER_WG


    def tma_stamp(k):
        return (f"if (tile == 8 && (warp & 1) == 0 && lane == 0) {{ unsigned long long _t; "
                f"asm volatile(\"mov.u64 %0, %%clock64;\" : \"=l\"(_t)); "
                f"g_prof[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)][{TMA} + 8 * half + {k}] = _t; }}\n")


    loop = "                for (int k = 0; k < nc; ++k)\n"
    copy = "                                                 layer_idx, max(page, 0), mbar(tile, c0 + k));\n"
    global PER_COPY
    # the kernel's copy loop (a prepared patch or the multicast twin may issue otherwise: then no per-copy stamps)
    PER_COPY = copy in src and "constexpr bool MULTICAST = true;" not in src
    if PER_COPY:
        src = pp.insert(src, "            __syncwarp();\n", tma_stamp(0))
        src = pp.insert(src, loop, "                for (int k = 0; k < nc; ++k) {\n")
        src = src.replace(loop + "                for (int k", "                for (int k", 1)
        src = pp.insert(src, copy, "                " + tma_stamp("1 + k") + "                }\n")
    if os.environ.get("PREFETCH_MAP") == "1":   # the tensor map's descriptor prefetched once the half is free
        src = pp.insert(src, "            if (lane < nc) mbar_arrive_expect_tx(mbar(tile, c0 + lane), KV_CHUNK_BYTES);\n",
                        "            if (lane == 0) tma_prefetch_map(&kv_map);\n", before=True)
    return src


PER_COPY = False
prof = pp.install_seesaws(instrument)
labels = [s[2] for s in pp.PAIR_STEPS]
wg0 = [s[2] for s in pp.PAIR_STEPS if s[0] == 0]
wg1 = [s[2] for s in pp.PAIR_STEPS if s[0] == 1]
# (loading warp, what it refills, the pair stamp of the release)
HALVES = [(0, "tile 8 left ", (0, wg0.index("a's left half released"))),
          (2, "tile 8 right", (1, wg1.index("P(a)'V_R(a) done"))),
          (1, "tile 9 left ", (0, wg0.index("P(b)V_L(b) done"))),
          (3, "tile 9 right", (1, wg1.index("P(b)V_R(b) done")))]
for name, p, a in pp.stamped_calls(sys.argv[1:], prof):
    a = a[(a[:, 0] > 0) & (a[:, pp.PER_WG] > 0) & (a[:, BASE + 2] > 0) & (a[:, BASE + 14] > 0)]
    t0 = a[:, 0]
    print(f"{name}: {len(a)} CTAs; clocks from warpgroup 0's pair-3 entry (medians)")
    print("   half           released  empty passed  issued   landed | wake  issue  flight  release->landed")
    for w, label, (wg, k) in HALVES:
        rel = a[:, pp.PER_WG * wg + k] - t0
        e, i, l = (a[:, BASE + 4 * w + j] - t0 for j in range(3))
        med = lambda x: np.median(x)  # noqa: E731
        print(f"   {label}  {med(rel):8.0f}  {med(e):12.0f}  {med(i):6.0f}  {med(l):7.0f} | {med(e - rel):5.0f} "
              f"{med(i - e):6.0f} {med(l - i):7.0f}  {med(l - rel):7.0f}  (p90 {np.percentile(l - rel, 90):.0f})")
    for half, nc in ((0, 4), (1, 5)) if PER_COPY else ():
        w = 2 * half
        e = a[:, BASE + 4 * w]
        steps = [a[:, TMA + 8 * half + k] - e for k in range(nc + 1)]
        print(f"   tile 8 {'right' if half else 'left '} from empty passed: expect_tx + syncwarp "
              f"{np.median(steps[0]):.0f}, after each box copy " + " ".join(f"{np.median(x):.0f}" for x in steps[1:]))
