"""Per-CTA phase times of the seesaw decode kernel on the GPU.

An instrumented copy of the kernel's rendered source stamps a clock at chosen
lines (thread 0 of each warpgroup; a __device__ array read back through
cupy.RawModule.get_global), and the copy replaces the memoised kernel for a few
bench cases.

* default: %globaltimer at kernel entry, Q landed, the first S issued, the end of
  the pair loop, the end of the peeled pairs and the end of the epilogue.
  Prints, for each phase over the CTAs: the median, the 5th percentile and the
  maximum; then the spread of entry times and the CTAs' end times.
* ``--pair N``: %clock64 at each hand-over of pair N of the loop (both warpgroups
  of an SM share the clock).  Prints each step's median cycles after the
  previous stamp of its warpgroup, and where each stamp falls in the pair.

The anchors are lines of kernels/hopper/mla_decode_seesaw.cu.j2; an assert names
one that moved.

* ``--pair N --per-warp``: the same stamps by every warp (lane 0), each step's
  median per warp: a named barrier waits for the last warp, which the first
  thread's stamps do not show.
* ``--boundary``: the `_segments` twin (MLA_CUPY_SPLIT=segments): %globaltimer at each of
  a CTA's first BOUNDARY_SEGMENTS segments' hand-overs (BOUNDARY_STEPS: warpgroup 0's
  pairs done, the kept releases made, Q landed, the first S retired; the loader's record
  taken and the segment's first tile issued).  Prints, for each boundary, each step's
  median [5th percentile, max] µs after the last segment's pairs ended.
* ``--start``: %globaltimer at the steps of a CTA's start (START_STEPS: its work
  found, the set-up's barrier, the loader's first copies, Q landed, each math
  warpgroup's first tile landed, the pair loop entered), each as the median, 5th
  percentile and maximum over the CTAs of its time since the CTA's entry.

    PYTHONPATH=.:tests python3 tools/phase_probe.py [--pair 3 [--per-warp] | --start | --boundary]
        [--cases CASE[:P] ...]
"""
import argparse
import sys

import numpy as np

NAME = "mla_decode_bf16_causal_dense_fold0_hopper_seesaw"
# the kernels a bench case of NAME's axes may run: the seesaw and its `_multicast` twin
# (h 128: compiler.takes_multicast); each gets its own instrumented copy
NAMES = (NAME, NAME + "_multicast")
SEGMENTS_NAME = NAME + "_multicast_segments"   # --boundary: the persistent twin
PER_WG = 16    # stamps per warpgroup: warpgroup w uses slots PER_WG w .. PER_WG w + PER_WG - 1
PER_WARP = 12  # --per-warp: warp v (0..7) uses slots PER_WARP v .. PER_WARP v + PER_WARP - 1
SLOTS = 8 * PER_WARP
CTA_SLOTS = 8192   # CTAs stamped, by their linear index in the grid


def declare_stamps(src):
    """A rendered kernel source with the stamps' array, g_prof[CTA_SLOTS][SLOTS], declared
    first (the probes' stamps may sit in helpers the kernel includes before itself)."""
    return f"__device__ unsigned long long g_prof[{CTA_SLOTS}][{SLOTS}];\n" + src


def stamp(k, clock="globaltimer", cond="true"):
    """A stamp in slot PER_WG * warpgroup + k by thread 0 of each warpgroup."""
    return (f"if (({cond}) && (threadIdx.x & 127) == 0) {{ unsigned long long _t; "
            f"asm volatile(\"mov.u64 %0, %%{clock};\" : \"=l\"(_t)); "
            f"g_prof[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)]"
            f"[(threadIdx.x >> 7) * {PER_WG} + {k}] = _t; }}\n")


def stamp_warp(k, clock="clock64", cond="true"):
    """A stamp in slot PER_WARP * warp + k by lane 0 of each warp."""
    return (f"if (({cond}) && (threadIdx.x & 31) == 0) {{ unsigned long long _t; "
            f"asm volatile(\"mov.u64 %0, %%{clock};\" : \"=l\"(_t)); "
            f"g_prof[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)]"
            f"[(threadIdx.x >> 5) * {PER_WARP} + {k}] = _t; }}\n")


def insert(src, anchor, text, *, before=False, count=1):
    assert src.count(anchor) == count, (anchor, src.count(anchor))
    return src.replace(anchor, text + anchor if before else anchor + text)


def pair_loop(wg):
    """The seesaw's pair loop of math warpgroup wg (an anchor line)."""
    return f"            for (pr = g0; pr + 3 < tile_end; pr += 2) pair_wg{wg}(true, true, true, false, pr);\n"


PHASES = ["entry->Q", "Q->firstS", "loop", "peeled", "epilogue"]
TILES_SLOT = 6   # warpgroup 0's slot after its stamps: the CTA's num_tiles (a count, not a clock)


def instrument_phases(src):
    src = insert(src, "float2* sL = reinterpret_cast<float2*>(smem + SMEM_P1);   // epilogue only\n", stamp(0))
    src = insert(src, "        bar_sync(BAR_Q);\n", stamp(1))
    for wg in (0, 1):
        src = insert(src, pair_loop(wg), stamp(2), before=True)
        src = insert(src, pair_loop(wg), stamp(3))
    src = insert(src, "        if (!more) pdl_launch_dependents();\n", stamp(4))
    end = src.rstrip().rfind("}")
    tiles = ("if (threadIdx.x == 0) g_prof[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)]"
             f"[{TILES_SLOT}] = num_tiles;\n")
    return src[:end] + stamp(5) + tiles + src[end:]


# (warpgroup, anchor line inside its pair lambda, stamp after it): the hand-overs
PAIR_STEPS = [
    (0, "            const int tb = ta + 1;\n            float mx[2], m0[2]", "entry"),
    (0, "            bar_arrive(BAR_M0);\n", "max of S(a) out"),
    (0, "            issue_pv(p, ta);\n            wgmma_commit();\n            // warpgroup 1's max", "P(a)V_L(a) queued"),
    (0, "            bar_sync(BAR_M1);\n", "max of wg1 in"),
    (0, "            wgmma_wait<0>();                      // P(a) V_L(a) done", "P(a)V_L(a) done"),
    (0, "            if (!KEEP) release(ta, 0);\n", "a's left half released"),
    (0, "            rescale_rows(o, scale1[0], scale1[1]);\n", "O_L rescaled by wg1's max"),
    (0, "                bar_sync(BAR_P1);\n", "P(b) in"),
    (0, "            if (NEXT_A) issue_qk(false, ta + 2, s, 0, L_CHUNKS);\n", "S(a+2) 0-3 queued"),
    (0, "                if (NEXT_A) wgmma_wait<1>(); else wgmma_wait<0>();   // P(b) V_L(b) done\n", "P(b)V_L(b) done"),
    (0, "                fence_regs(s);\n            }\n        };\n        auto pair_wg1", "S(a+2) done"),
    (1, "            if (HAS_B) mask_scale(tb, s, mx);\n", "S(b) masked"),
    (1, "            bar_sync(BAR_M0);\n", "max of wg0 in"),
    (1, "                issue_pv(p, tb);\n                wgmma_commit();\n            }\n            bar_sync(BAR_P0);",
     "P(b)V_R(b) queued"),
    (1, "            bar_sync(BAR_P0);\n", "P(a)' in"),
    (1, "            issue_pv(p_other, ta);\n            wgmma_commit();\n            if (HAS_B) {\n"
        "                wgmma_wait<1>();", "P(a)'V_R(a) queued"),
    (1, "                wgmma_wait<1>();                   // P(b) V_R(b) done", "P(b)V_R(b) done"),
    (1, "            wgmma_wait<0>();                       // P(a)' V_R(a) done", "P(a)'V_R(a) done"),
    (1, "                fence_regs(s);\n            }\n        };\n\n", "S(b+2) done"),
]


def the_anchor(src, anchors):
    """The one of ``anchors`` (a line, or a tuple naming the same line in the kernel and in
    prepared patches of it) that the source holds, exactly once."""
    found = [a for a in ((anchors,) if isinstance(anchors, str) else anchors) if a in src]
    assert len(found) == 1 and src.count(found[0]) == 1, (anchors, [src.count(a) for a in found])
    return found[0]


def instrument_pair(src, pair, per_warp=False):
    """A clock64 stamp after the line where each PAIR_STEPS anchor starts (the
    anchor, unique in the source, may run over several lines to be so; a tuple
    names the same step in the kernel and in a prepared patch of it, and exactly
    one of them is there); with per_warp, by every warp of the warpgroup instead
    of its first thread.  The slots follow PAIR_STEPS' order whatever the order
    of the lines."""
    slot = {0: 0, 1: 0}
    for wg, anchors, _ in PAIR_STEPS:
        anchor = the_anchor(src, anchors)
        at = src.index("\n", src.index(anchor)) + 1
        mark = stamp_warp if per_warp else stamp
        src = src[:at] + mark(slot[wg], "clock64", f"ta == 2 * {pair}") + src[at:]
        slot[wg] += 1
    assert max(slot.values()) <= (PER_WARP if per_warp else PER_WG)
    return src


# A CTA's start: (the warpgroups whose stamp the report reads, slot, anchor (the stamp goes
# after it), condition, label).  Warpgroup 2 loads; thread 0 of its warp 0 issues tile 0's
# left half.
START_STEPS = [
    ((0, 1, 2), 0, "float2* sL = reinterpret_cast<float2*>(smem + SMEM_P1);   // epilogue only\n", "true", "entry"),
    ((0,), 1, "        const int split_length = work.split.split_len;\n", "true", "work found"),
    ((0, 1, 2), 2, "    const CtaArgs ca = *cta_args;\n", "true", "set-up's barrier"),
    ((2,), 3, ("                                                     layer_idx, max(page, 0), mbar(tile, c0 + k));\n"
               "                }\n            }\n"), "tile == 0", "loader: tile 0's copies issued"),
    ((0, 1), 3, "        bar_sync(BAR_Q);\n", "true", "Q landed"),
    ((0, 1), 4, "                mbar_wait(mbar(tile, c), parity(tile));\n                wgmma_fence();\n",
     "tile <= 1 && ci == 0", "first tile's first chunk landed"),
]
START_LOOP_SLOT = 5   # each math warpgroup: the pair loop entered


def instrument_start(src):
    for _, k, anchors, cond, _ in START_STEPS:
        src = insert(src, the_anchor(src, anchors), stamp(k, cond=cond))
    for wg in (0, 1):
        src = insert(src, pair_loop(wg), stamp(START_LOOP_SLOT), before=True)
    return src


# The `_segments` twin's hand-overs at a segment's boundaries: (slot within the segment's
# BOUNDARY_SLOTS, anchor (the stamp goes after it, or before it where `before`), the
# segment's counter there, condition, label).  Warpgroup 0 stamps the math's steps, the
# loading warpgroup's thread 0 (warp 0: the even tiles) the loader's.
BOUNDARY_SEGMENTS = 4
BOUNDARY_SLOTS = 4
BOUNDARY_STEPS = [
    # warpgroup 0
    (0, "        // (segment mode: the next record, written before this warpgroup's barriers since)\n",
     "seg", "true", "pairs done", True),
    (1, "            release(last_a + 1, wg);\n", "seg", "true", "kept releases made", False),
    (2, "        bar_sync(BAR_Q);\n", "seg", "true", "Q landed", False),
    (3, "                issue_qk(false, g0, s, 0, CHUNKS);\n                wgmma_wait<0>();\n"
        "                fence_regs(s);\n", "seg", "true", "first S retired", False),
    # the loading warpgroup
    (0, "                    mbar_wait(record_bar(seg_now), static_cast<u32>(((seg_now - 1) >> 1) & 1));\n",
     "seg_now", "true", "loader: record taken", False),
    (1, "                    issue_tile(tile, page, next);\n", "seg_now", "tile == g0", "loader: first tile issued", False),
]


def instrument_boundary(src):
    for k, anchor, counter, cond, _, before in BOUNDARY_STEPS:
        src = insert(src, anchor, stamp(f"{BOUNDARY_SLOTS} * {counter} + {k}",
                                         cond=f"({cond}) && {counter} < {BOUNDARY_SEGMENTS}"), before=before)
    return src


def report_boundary(name, p, a):
    """Each boundary k (segments k - 1 -> k) of the CTAs that reached segment k: each step's
    time after warpgroup 0's pairs of segment k - 1 ended, median [5th percentile, max], µs;
    then the boundary as a whole (pairs done to the next segment's first S retired)."""
    loader = 2 * PER_WG
    print(f"{name} P={p}: {len(a)} CTAs; segment boundaries (us after the last segment's pairs)")
    for k in range(1, BOUNDARY_SEGMENTS):
        prev, cur = BOUNDARY_SLOTS * (k - 1), BOUNDARY_SLOTS * k
        b = a[(a[:, cur + 3] > 0) & (a[:, prev] > 0)]
        if not len(b):
            break
        t0 = b[:, prev]
        cols = [(b[:, prev + 1], "kept releases made"), (b[:, loader + cur], "loader: record taken"),
                (b[:, loader + cur + 1], "loader: first tile issued"), (b[:, cur + 2], "Q landed"),
                (b[:, cur + 3], "first S retired")]
        print(f"   boundary {k} ({len(b)} CTAs)")
        for col, label in cols:
            d = (col - t0) / 1e3
            print(f"      {label:28s} {np.median(d):6.2f} [{np.percentile(d, 5):6.2f}, {d.max():6.2f}]")


def instrumented_source(pair, per_warp=False, start=False, name=NAME, boundary=False):
    from mla_cupy.render import render
    from mla_cupy.variants import parse
    src = render(parse(name))
    src = declare_stamps(src)
    if start:
        return instrument_start(src)
    if boundary:
        return instrument_boundary(src)
    return instrument_pair(src, pair, per_warp) if pair is not None else instrument_phases(src)


def report_start(name, p, a):
    """Each START_STEPS stamp (and the loop's) of the CTAs that ran keys: its time since
    the CTA's entry (warpgroup 0's), median [5th percentile, max], µs."""
    a = a[(a[:, START_LOOP_SLOT] > 0) & (a[:, PER_WG + START_LOOP_SLOT] > 0)]
    print(f"{name} P={p}: the start of {len(a)} CTAs (us since the CTA's entry)")
    rows = [(wg, k, label) for wgs, k, _, _, label in START_STEPS[1:] for wg in wgs]
    rows += [(wg, START_LOOP_SLOT, "pair loop entered") for wg in (0, 1)]
    for wg, k, label in sorted(rows, key=lambda r: (np.median(a[:, PER_WG * r[0] + r[1]] - a[:, 0]), r[0])):
        d = (a[:, PER_WG * wg + k] - a[:, 0]) / 1e3
        print(f"   wg{wg} {label:34s} {np.median(d):6.2f} [{np.percentile(d, 5):6.2f}, {d.max():6.2f}]")


def install(name, src):
    """Compile an instrumented copy of variant ``name`` and put it in the compiler's memo,
    so the dispatcher launches it; returns its stamps (g_prof) as Stamps."""
    import cupy
    from mla_cupy import compiler
    from mla_cupy.variants import parse
    mod = cupy.RawModule(code=src, options=(*compiler.BASE_OPTIONS, f"-arch={compiler.device_arch(0)}"),
                         backend="nvrtc")
    k = mod.get_function(name)
    k.max_dynamic_shared_size_bytes = compiler._dynamic_smem(parse(name))
    compiler._memo[(name, 0)] = k
    return Stamps([cupy.ndarray((CTA_SLOTS * SLOTS,), dtype=np.uint64, memptr=mod.get_global("g_prof"))])


class Stamps:
    """The stamps of one or more instrumented kernels (flat uint64 arrays, one g_prof each):
    a call runs one of them, so their sum is its stamps."""

    def __init__(self, arrays):
        self.arrays = list(arrays)

    def fill(self, value):
        for a in self.arrays:
            a.fill(value)

    def read(self):
        import cupy
        return sum(cupy.asnumpy(a) for a in self.arrays)


def install_seesaws(instrument):
    """Each kernel of NAMES compiled from ``instrument(name)`` (its instrumented source) and
    put in the compiler's memo; their stamps as one Stamps."""
    return Stamps(a for name in NAMES for a in install(name, instrument(name)).arrays)


def stamped_calls(cases, prof, warm="none"):
    """For each CASE[:P] of bench's named cases: a call to warm up, then three calls (the L2
    flushed before each, unless warm is "all"; with warm "data", Q and the metadata read back
    after the flush, so only the kernel's code is cold); yields (case, P, the last call's
    stamps of the CTAs that ran: an int64 array [CTAs, SLOTS])."""
    if "tools" not in sys.path:
        sys.path.insert(0, "tools")
    from mla_cupy import bench
    from split_sweep import call_with
    t = bench.Timer()
    for spec in cases:
        name, _, p = spec.partition(":")
        p = int(p) if p else None
        c = bench.case_named(name)
        inputs = bench.build_inputs(c)
        f, _, _ = call_with(c, inputs, p)
        f()
        t.sync()
        for _ in range(3):
            prof.fill(0)
            if warm != "all":
                t.flush()
            if warm == "data":
                for x in (inputs.q, inputs.offsets, inputs.kv.cache_lengths, inputs.kv.lookup_table):
                    x.ravel()[::16].sum()   # (one item in 16: every 128-byte line read)
            f()
            t.sync()
        a = prof.read().reshape(CTA_SLOTS, SLOTS).astype(np.int64)
        yield name, p, a[a[:, 0] > 0]


def report_phases(name, p, a):
    t0 = a[:, 0].min()
    done = a[(a[:, 5] > 0) & (a[:, PER_WG + 5] > 0)]    # CTAs that ran keys (balanced mode's extra ones exit)
    print(f"{name} P={p}: {len(a)} CTAs ({len(a) - len(done)} without keys), kernel span "
          f"{(a[:, [5, PER_WG + 5]].max() - t0) / 1e3:.1f} us, "
          f"entry spread {(a[:, 0].max() - t0) / 1e3:.1f} us (median {(np.median(a[:, 0]) - t0) / 1e3:.1f})")
    a = done
    for wg in (0, 1):
        d = np.diff(a[:, wg * PER_WG: wg * PER_WG + 6], axis=1) / 1e3
        if wg == 1:
            d[:, 0] = (a[:, PER_WG + 1] - a[:, 0]) / 1e3
        print(f"   wg{wg}: " + "  ".join(f"{n} {np.median(d[:, j]):.2f} [{np.percentile(d[:, j], 5):.2f}, "
                                          f"{d[:, j].max():.2f}]" for j, n in enumerate(PHASES)))
    ends = (a[:, 5] - t0) / 1e3
    print(f"   CTA end times: min {ends.min():.1f} median {np.median(ends):.1f} max {ends.max():.1f} us")
    tiles = a[:, TILES_SLOT]
    per_tile = (a[:, 4] - a[:, 2]) / 1e3 / np.maximum(tiles, 1)     # loop and peeled pairs, wg0
    starts = (a[:, 0] - t0) / 1e3
    fixed = (a[:, 5] - a[:, 0]) / 1e3 - per_tile * tiles
    print(f"   tiles a CTA: min {tiles.min()} median {np.median(tiles):.0f} max {tiles.max()}; "
          f"us a tile (wg0, loop + peeled): median {np.median(per_tile):.3f} [{np.percentile(per_tile, 5):.3f}, "
          f"{np.percentile(per_tile, 95):.3f}]; the rest of a CTA: median {np.median(fixed):.1f} us")
    last = np.argsort(ends)[-5:]
    print("   last CTAs to end (start, tiles, us a tile, end): " + "; ".join(
        f"{starts[i]:.1f} {tiles[i]} {per_tile[i]:.2f} {ends[i]:.1f}" for i in last))
    late = starts > 5.0
    if late.any():
        print(f"   {late.sum()} CTAs started after 5 us (a later wave): median start {np.median(starts[late]):.1f}, "
              f"their tiles median {np.median(tiles[late]):.0f}")


def report_steps(a, steps, width=20):
    """Clock64 stamps of (warpgroup, label) steps in slots PER_WG * warpgroup + k, k in
    their order: each step's median cycle from warpgroup 0's first stamp, and from the
    previous stamp of its warpgroup (the first one's: from warpgroup 0's)."""
    t0 = a[:, 0]
    slot = {0: 0, 1: 0}
    for wg, label in steps:
        k = slot[wg]
        slot[wg] += 1
        col = a[:, PER_WG * wg + k]
        since = col - a[:, PER_WG * wg + k - 1] if k > 0 else col - t0
        print(f"   wg{wg} {label:{width}s} at {np.median(col - t0):7.0f}  (+{np.median(since):6.0f})")


def report_pair(name, p, a, pair):
    a = a[(a[:, 0] > 0) & (a[:, PER_WG] > 0)]
    print(f"{name} P={p}: pair {pair} in {len(a)} CTAs (clock64 cycles; wg0's entry = 0)")
    report_steps(a, [(wg, label) for wg, _, label in PAIR_STEPS])


def report_pair_warps(name, p, a, pair):
    """Each step's median cycle per warp (4 a warpgroup), from warp 0's entry: a
    hand-over waits for the last warp to arrive, which the first thread's
    stamps cannot show."""
    a = a[(a[:, 0] > 0) & (a[:, 4 * PER_WARP] > 0)]
    print(f"{name} P={p}: pair {pair} in {len(a)} CTAs, per warp (clock64 cycles; warp 0's entry = 0)")
    t0 = a[:, 0]
    slot = {0: 0, 1: 0}
    for wg, _, label in PAIR_STEPS:
        k = slot[wg]
        slot[wg] += 1
        cols = [np.median(a[:, PER_WARP * (4 * wg + v) + k] - t0) for v in range(4)]
        print(f"   wg{wg} {label:28s} " + " ".join(f"{c:7.0f}" for c in cols))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--pair", type=int, default=None, help="stamp the hand-overs of this pair instead")
    ap.add_argument("--per-warp", action="store_true", help="with --pair: every warp's stamps, not the first thread's")
    ap.add_argument("--start", action="store_true", help="stamp the steps of a CTA's start instead (START_STEPS)")
    ap.add_argument("--boundary", action="store_true",
                    help="the `_segments` twin under MLA_CUPY_SPLIT=segments: stamp its segment boundaries")
    ap.add_argument("--cases", nargs="+", default=None,
                    help="CASE:P, or CASE for the dispatcher's own split (balanced splits where they apply; "
                         "--boundary: segment mode, the default cases the DeepSeek h128 rows and b128 h128)")
    args = ap.parse_args()
    if args.cases is None:
        args.cases = (["ds_h128_sq1_ragged", "ds_h128_sq1_uniform", "b128_h128_s8192"] if args.boundary else
                      ["b1_h128_s65536:64", "b32_h128_s4096:2", "b32_h128_s4096:1", "b128_h128_s8192:1"])
    if args.boundary:
        import os
        os.environ["MLA_CUPY_SPLIT"] = "segments"
        prof = install(SEGMENTS_NAME, instrumented_source(None, name=SEGMENTS_NAME, boundary=True))
    else:
        prof = install_seesaws(lambda name: instrumented_source(args.pair, args.per_warp, args.start, name))
    for name, p, a in stamped_calls(args.cases, prof):
        if args.boundary:
            report_boundary(name, p, a)
        elif args.start:
            report_start(name, p, a)
        elif args.pair is None:
            report_phases(name, p, a)
        elif args.per_warp:
            report_pair_warps(name, p, a, args.pair)
        else:
            report_pair(name, p, a, args.pair)


if __name__ == "__main__":
    main()
