"""Session 36 call 7: warpgroup 2's set-up on the tree of
next_seesaw_first_tile_in_setup_pf.patch, its thread 0's globaltimer read into registers
at each step and stored once at the end (no global store between the steps, so no fence
waits for a stamp): work found, split_keys' range in hand, the mbarriers made, the fence
passed, the first lookup returned, the first copies issued.  us since warpgroup 0's entry
stamp.  Run from that tree's root: PYTHONPATH=.:tests."""
import sys

import numpy as np

sys.path.insert(0, "tools")
import phase_probe as pp  # noqa: E402

T = ["_t1", "_t2", "_t3", "_t4", "_t5", "_t6"]


def now(var, cond="true"):
    return f"if ({cond}) asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"({var}) :: \"memory\");\n"


src = pp.instrumented_source(None, start=True)
src = pp.insert(src, "    CtaArgs* cta_args = reinterpret_cast<CtaArgs*>(smem + SMEM_ARGS);\n",
                "    unsigned long long " + ", ".join(f"{t} = 0" for t in T) + ";\n")
src = pp.insert(src, "        const int split_length = work.split.split_len;\n", now("_t1"))
src = pp.insert(src, "                                         indices_stride, extra_stride, split_length, place.split);\n",
                now("_t2", "keys.hi != -7"))
src = pp.insert(src, "            if (lane == 0) mbar_init(empty_bar(warp & 1, half), 1);\n", now("_t3"))
src = pp.insert(src, "            fence_mbar_init();\n", now("_t4"))
old = "            issue_half(lv, warp & 1, page_of(lv, warp & 1, lane), c0, nc, lane);\n"
assert src.count(old) == 1
store = "".join(f"g_prof[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)][{2 * pp.PER_WG + 8 + i}] = {t};\n"
                for i, t in enumerate(T))
src = src.replace(old, "            const int first_page = page_of(lv, warp & 1, lane);\n" + now("_t5", "first_page != -7")
                  + "            issue_half(lv, warp & 1, first_page, c0, nc, lane);\n" + now("_t6")
                  + "            if ((threadIdx.x & 127) == 0) {\n" + store + "            }\n")
prof = pp.install(pp.NAME, src)
labels = ["work found", "split_keys' range", "mbarriers made", "fence passed", "first lookup returned",
          "first copies issued"]
import os  # noqa: E402

warms = os.environ.get("WARMS", "none").split()   # next_session37_call1.sh: "all" too (no L2 flush)
for name, p, a in (r for w in warms for r in pp.stamped_calls(["b1_h128_s65536", "b32_h128_s4096",
                                                                "ds_h128_sq1_uniform"], prof, warm=w)):
    a = a[a[:, 2 * pp.PER_WG + 13] > 0]
    print(f"{name}: warpgroup 2's set-up in {len(a)} CTAs (us since the CTA's entry)", flush=True)
    for i, label in enumerate(labels):
        d = (a[:, 2 * pp.PER_WG + 8 + i] - a[:, 0]) / 1e3
        print(f"   wg2 {label:24s} {np.median(d):6.2f} [{np.percentile(d, 5):6.2f}, {d.max():6.2f}]")
    d = (a[:, 2 * pp.PER_WG + 2] - a[:, 0]) / 1e3
    print(f"   wg2 {'set-up barrier':24s} {np.median(d):6.2f}")
