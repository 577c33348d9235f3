"""Session 36 call 6: where the seesaw loader's start goes, on the tree of
next_seesaw_first_tile_in_setup_pf.patch (run from that tree's root: PYTHONPATH=.:tests).
Warpgroup 2's thread 0 stamps (globaltimer, us since warpgroup 0's entry): work found, its
mbarriers made, the loader view made (page divisor), its first lookup returned, its first
copies issued, the set-up's barrier.  With L2 flushed before each call, then with Q and the
metadata read back after the flush (warm="data")."""
import sys

import numpy as np

sys.path.insert(0, "tools")
import phase_probe as pp  # noqa: E402

src = pp.instrumented_source(None, start=True)
src = pp.insert(src, "            fence_mbar_init();\n            __syncwarp();\n", pp.stamp(4))
src = pp.insert(src, "lookup_table + static_cast<i64>(b) * lookup_stride};\n", pp.stamp(6))
old = "            issue_half(lv, warp & 1, page_of(lv, warp & 1, lane), c0, nc, lane);\n"
assert src.count(old) == 1
src = src.replace(old, "            const int first_page = page_of(lv, warp & 1, lane);\n"
                  + pp.stamp(7, cond="first_page != -7")
                  + "            issue_half(lv, warp & 1, first_page, c0, nc, lane);\n")
prof = pp.install(pp.NAME, src)
steps = [(1, "work found"), (4, "mbarriers made"), (6, "loader view made"), (7, "first lookup returned"),
         (3, "first copies issued"), (2, "set-up's barrier")]
for warm in ("none", "data"):
    for name, p, a in pp.stamped_calls(["b1_h128_s65536", "b32_h128_s4096", "ds_h128_sq1_uniform"], prof, warm=warm):
        a = a[a[:, 2 * pp.PER_WG + 3] > 0]
        print(f"{name} warm={warm}: warpgroup 2's start in {len(a)} CTAs (us since the CTA's entry)")
        for k, label in steps:
            d = (a[:, 2 * pp.PER_WG + k] - a[:, 0]) / 1e3
            print(f"   wg2 {label:24s} {np.median(d):6.2f} [{np.percentile(d, 5):6.2f}, {d.max():6.2f}]")
        for wg in (0, 1):
            d = (a[:, pp.PER_WG * wg + pp.START_LOOP_SLOT] - a[:, 0]) / 1e3
            print(f"   wg{wg} pair loop entered        {np.median(d):6.2f}")
