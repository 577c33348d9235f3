"""Per-CTA phase times of the seesaw decode kernel on the GPU: an instrumented copy
of its rendered source stamps %globaltimer at kernel entry, Q landed, the first S
issued, the end of the pair loop, the end of the peeled pairs and the end of the
epilogue (thread 0 of each warpgroup; a __device__ array read back through
cupy.RawModule.get_global), and the copy replaces the memoised kernel for a few
bench cases.  Prints the median, 5th percentile and maximum of each phase over
the CTAs, the spread of entry times and the CTAs' end times.  The anchors are
lines of kernels/hopper/mla_decode_seesaw.cu.j2; an assert names one that moved.

    PYTHONPATH=.:tests python3 tools/phase_probe.py
"""
import os, sys
import numpy as np, cupy
sys.path.insert(0, "tools")
from mla_cupy import bench, compiler
from mla_cupy.render import render
from mla_cupy.variants import parse as parse_name
from split_sweep import call_with

NAME = "mla_decode_bf16_causal_dense_fold0_hopper_seesaw"
src = render(parse_name(NAME))
stamp = lambda k: (f"if ((threadIdx.x & 127) == 0) {{ unsigned long long _t; asm volatile(\"mov.u64 %0, %%globaltimer;\" : \"=l\"(_t)); "
                   f"g_prof[blockIdx.x + gridDim.x * (blockIdx.y + gridDim.y * blockIdx.z)][(threadIdx.x >> 7) * 8 + {k}] = _t; }}\n")
def ins_after(s, anchor, text, count=1):
    assert s.count(anchor) == count, (anchor, s.count(anchor))
    return s.replace(anchor, anchor + text)
src = src.replace('extern "C" __global__', '__device__ unsigned long long g_prof[8192][16];\nextern "C" __global__', 1)
src = ins_after(src, "float2* sL = reinterpret_cast<float2*>(smem + SMEM_P1);   // epilogue only\n", stamp(0))
src = ins_after(src, "        bar_sync(BAR_Q);\n", stamp(1))
src = src.replace("        for (; 2 * pr + 3 < num_tiles; ++pr) pair_wg0(true, true, true, pr);\n",
                  stamp(2) + "        for (; 2 * pr + 3 < num_tiles; ++pr) pair_wg0(true, true, true, pr);\n" + stamp(3))
src = src.replace("        for (; 2 * pr + 3 < num_tiles; ++pr) pair_wg1(true, true, true, pr);\n",
                  stamp(2) + "        for (; 2 * pr + 3 < num_tiles; ++pr) pair_wg1(true, true, true, pr);\n" + stamp(3))
src = ins_after(src, "    pdl_launch_dependents();\n", stamp(4))
body_end = src.rstrip().rfind("}")
src = src[:body_end] + stamp(5) + src[body_end:]
mod = cupy.RawModule(code=src, options=(*compiler.BASE_OPTIONS, f"-arch={compiler.device_arch(0)}"), backend="nvrtc")
k = mod.get_function(NAME)
k.max_dynamic_shared_size_bytes = compiler._dynamic_smem(parse_name(NAME))
compiler._memo[(NAME, 0)] = k
prof = cupy.ndarray((8192 * 16,), dtype=np.uint64, memptr=mod.get_global("g_prof"))
t = bench.Timer()
names = ["entry->Q", "Q->firstS", "loop", "peeled", "epilogue"]
for name, p in (("b1_h128_s65536", 64), ("b32_h128_s4096", 2), ("b32_h128_s4096", 1), ("b128_h128_s8192", 1)):
    c = bench.NAMED_CASES[name]; i = bench.build_inputs(c)
    f, out, _ = call_with(c, i, p); f(); t.sync()
    for _ in range(3):
        cupy.cuda.runtime.memset(prof.data.ptr, 0, prof.nbytes)
        t.flush(); f(); t.sync()
    a = cupy.asnumpy(prof).reshape(8192, 16).astype(np.int64)
    a = a[a[:, 0] > 0]
    t0 = a[:, 0].min()
    print(f"{name} P={p}: {len(a)} CTAs, kernel span {(a[:, [5, 13]].max() - t0) / 1e3:.1f} us, "
          f"entry spread {(a[:, 0].max() - t0) / 1e3:.1f} us (median {(np.median(a[:, 0]) - t0) / 1e3:.1f})")
    for wg in (0, 1):
        d = np.diff(a[:, wg * 8: wg * 8 + 6], axis=1) / 1e3
        if wg == 1:
            d[:, 0] = (a[:, 9] - a[:, 0]) / 1e3
        print(f"   wg{wg}: " + "  ".join(f"{n} {np.median(d[:, j]):.2f} [{np.percentile(d[:, j], 5):.2f}, {d[:, j].max():.2f}]" for j, n in enumerate(names)))
    ends = (a[:, 5] - t0) / 1e3
    print(f"   CTA end times: min {ends.min():.1f} median {np.median(ends):.1f} max {ends.max():.1f} us")
