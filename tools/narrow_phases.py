"""Per-CTA phase times of the narrow decode kernel over a 16-bit cache, on the GPU.

Where a short call's time goes (issue 8's b=8 h=16 row: 8 tiles a CTA): an instrumented
copy of the narrow kernel (phase_probe's stamps: %globaltimer by thread 0 of each
warpgroup into a __device__ array) replaces the memoised kernel for the cases given.

Math warpgroup 0: entry, the prologue done (the shares' scan, the mbarriers), the first
segment's Q landed, its first tile's softmax done, the last segment's loop done, the
kernel's end; the loader warp: its entry, its first tile's copies issued, its last.
Per CTA also the tiles and segments it ran; in segment mode the shares' scan in steps
(batch_size landed, the first pass, the share's arithmetic, its first sequence found), the
loader's first segment and first page id, and the math's first S^T (issued, retired).
Prints each phase's median [5th percentile, max] over the CTAs, the spread of entry times,
the CTAs' end times and the µs a tile.

    PYTHONPATH=.:tests python3 tools/narrow_phases.py [--rows 16|32] [--cases CASE[:P] ...]
"""
import argparse
import sys

import numpy as np

sys.path.insert(0, "tools")
from phase_probe import PER_WG, declare_stamps, insert, install, stamp, stamped_calls  # noqa: E402

TILES_SLOT, SEGMENTS_SLOT = 8, 9   # warpgroup 0's counters (its stamps: slots 0-7 and 10-13)


def instrumented_source(name, consumers):
    from mla_cupy.render import render
    from mla_cupy.variants import parse
    src = render(parse(name))
    src = declare_stamps(src)   # (the shares' scan, stamped too, comes before the kernel)
    cta = "g_prof[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)]"
    src = insert(src, "    const int warp = tid >> 5, lane = tid & 31;\n", stamp(0))
    # inside sequence_shares (segment mode): batch_size landed, the first pass's scan, the share's
    # arithmetic, its first sequence found
    src = insert(src, "    const int batch = static_cast<int>(min(load_i64_now(scalar_args), static_cast<i64>(host_batch)));\n",
                 stamp(10, cond="batch >= 0"))
    src = insert(src, "    SharesWalk w{};\n", stamp(11))
    src = insert(src, "    if (tid == 0) { found[0] = batch; found[1] = weighted ? w.units : W; found[2] = x0; "
                      "found[3] = aligned ? W : x1; }\n",
                 stamp(13), before=True)
    src = insert(src, "    w.u = static_cast<int>(found[0]);\n", stamp(12), before=True)
    src = insert(src, "    __syncthreads();   // (cta_sequence's or sequence_shares' scratch is free from here on)\n",
                 stamp(1))
    src = insert(src, "    else bar(BAR_Q);\n", stamp(2, cond="k == 0"))
    src = insert(src, "        softmax(0, s);\n", stamp(3, cond="k == 0"))
    # the first segment's first S^T: issued from here, and retired (its chunks had landed)
    src = insert(src, "        issue_st(0, s);\n        wgmma_wait<0>();\n", stamp(6, cond="k == 0"), before=True)
    src = insert(src, "        issue_st(0, s);\n        wgmma_wait<0>();\n", stamp(7, cond="k == 0"))
    src = insert(src, "    pdl_launch_dependents();\n", stamp(4))
    src = insert(src, "    pdl_launch_dependents();\n",
                 f"if (tid == 0) {{ {cta}[{TILES_SLOT}] += num_tiles; {cta}[{SEGMENTS_SLOT}] += 1; }}\n")
    loader = "        // ============ the loads: each chunk into its slot once the slot's last reader retired ============\n"
    src = insert(src, loader, stamp(0))
    src = insert(src, "            page = next_page;\n", stamp(1, cond="k == 0 && tile == 0"), before=True)
    # the loader's first segment found, then its first page id landed (the stamp waits for it)
    src = insert(src, "        int page = page_of(0);\n", stamp(3, cond="k == 0"), before=True)
    src = insert(src, "        int page = page_of(0);\n", stamp(4, cond="k == 0 && page != -7"))
    at = src.index("    if (warp >= LOADER_WARP) return;\n")
    ret = src.rindex("        return;\n", 0, at)
    src = src[:ret] + stamp(2) + src[ret:]
    end = src.rstrip().rfind("}")
    return src[:end] + stamp(5) + src[end:], consumers * PER_WG


PHASES = ["entry->prologue", "->Q", "->tile0", "->loop end", "->end"]


def boundary_fit(spans, tiles, segments):
    """Least squares of each CTA's span (entry to end, us) on its tiles and its segment
    boundaries (segments - 1): (fixed us, us a tile, us a boundary), or None where the
    CTAs' boundaries do not vary (the boundary's cost is then not separable)."""
    spans, tiles, bounds = (np.asarray(x, dtype=np.float64) for x in (spans, tiles, np.asarray(segments) - 1))
    if np.ptp(bounds) == 0 or np.ptp(tiles) == 0:
        return None
    design = np.stack([np.ones_like(tiles), tiles, bounds], axis=1)
    (fixed, per_tile, per_bound), *_ = np.linalg.lstsq(design, spans, rcond=None)
    return float(fixed), float(per_tile), float(per_bound)


def report(name, p, a, loader):
    t0 = a[:, 0].min()
    a = a[a[:, 5] > 0]
    tiles, segs = a[:, TILES_SLOT], a[:, SEGMENTS_SLOT]
    print(f"{name} P={p}: {len(a)} CTAs, kernel span {(a[:, 5].max() - t0) / 1e3:.1f} us, entry spread "
          f"{(a[:, 0].max() - t0) / 1e3:.1f} us (median {(np.median(a[:, 0]) - t0) / 1e3:.1f}); tiles a CTA "
          f"min {tiles.min()} median {np.median(tiles):.0f} max {tiles.max()}, segments median {np.median(segs):.0f} "
          f"max {segs.max()}")
    d = np.diff(a[:, 0:6], axis=1) / 1e3
    print("   math: " + "  ".join(f"{n} {np.median(d[:, j]):.2f} [{np.percentile(d[:, j], 5):.2f}, {d[:, j].max():.2f}]"
                                  for j, n in enumerate(PHASES)))
    ld = a[:, loader:loader + 5]
    print(f"   loader: entry {np.median(ld[:, 0] - a[:, 0]) / 1e3:.2f} after the math's; first tile issued "
          f"{np.median(ld[:, 1] - ld[:, 0]) / 1e3:.2f} after; last issued {np.median(ld[:, 2] - ld[:, 0]) / 1e3:.2f} "
          f"after (its tile 0 to the math's tile 0 done: {np.median(a[:, 3] - ld[:, 1]) / 1e3:.2f})")
    if (a[:, 10:14] > 0).all():
        sh = a[:, [0, 10, 11, 13, 12, 1]]
        print("   prologue (segment mode): " + "  ".join(
            f"{n} {np.median(sh[:, j + 1] - sh[:, j]) / 1e3:.2f}" for j, n in
            enumerate(["entry->batch_size landed", "->first scan", "->the share's arithmetic",
                       "->its first sequence found", "->barriers"])))
    print(f"   math tile 0: Q landed->S^T issued from {np.median(a[:, 6] - a[:, 2]) / 1e3:.2f}  ->S^T retired "
          f"{np.median(a[:, 7] - a[:, 6]) / 1e3:.2f} (the loader's tile 0 issued -> S^T retired "
          f"{np.median(a[:, 7] - a[:, loader + 1]) / 1e3:.2f})  ->softmax done {np.median(a[:, 3] - a[:, 7]) / 1e3:.2f}")
    print(f"   loader: entry->segment found {np.median(ld[:, 3] - ld[:, 0]) / 1e3:.2f}  ->page landed "
          f"{np.median(a[:, loader + 4] - ld[:, 3]) / 1e3:.2f}  ->tile 0 issued {np.median(ld[:, 1] - a[:, loader + 4]) / 1e3:.2f}")
    per_tile = (a[:, 4] - a[:, 2]) / 1e3 / np.maximum(tiles, 1)
    ends = (a[:, 5] - t0) / 1e3
    print(f"   us a tile (Q landed to loop end over the CTA's tiles): median {np.median(per_tile):.3f} "
          f"[{np.percentile(per_tile, 5):.3f}, {np.percentile(per_tile, 95):.3f}]; CTA end times min {ends.min():.1f} "
          f"median {np.median(ends):.1f} max {ends.max():.1f} us")
    fit = boundary_fit((a[:, 5] - a[:, 0]) / 1e3, tiles, segs)
    if fit:
        print(f"   span = {fit[0]:.1f} + {fit[1]:.3f} a tile + {fit[2]:.2f} a segment boundary (us, least squares "
              f"over the CTAs)")


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--rows", type=int, choices=(16, 32), default=16, help="the narrow tile's rows")
    ap.add_argument("--cases", nargs="+", default=["b8_h16_s8192", "b128_h16_s8192"],
                    help="CASE:P, or CASE for the dispatcher's own choice (segment mode where it applies)")
    ap.add_argument("--warm", choices=("none", "data", "all"), default="none",
                    help="before each call: L2 flushed (none), flushed then Q and the metadata read "
                         "back (data: only the kernel's code cold), not flushed (all)")
    args = ap.parse_args()
    name = f"mla_decode_bf16_causal_dense_fold0_m{args.rows}_hopper_narrow"
    src, loader = instrumented_source(name, 1 if args.rows == 16 else 2)
    prof = install(name, src)
    for case, p, a in stamped_calls(args.cases, prof, args.warm):
        report(f"{case} (warm: {args.warm})", p, a, loader)


if __name__ == "__main__":
    main()
