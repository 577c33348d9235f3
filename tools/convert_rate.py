"""How fast one SM converts e4m3 to bf16 the way the fp8 producer does, and each
instruction of that conversion alone: the rate the producer warpgroup's ~384
conversion instructions a tile (session 10, NOTES.md) can reach at best.

A kernel built from the production helpers (kernels/common/types.cuh.j2 and
fp8.cuh.j2) converts 16 e4m3 values a thread per step in registers, for many
steps, with nothing else to do: no memory but a final word a thread, every SM
full of warps.  Modes:
  full     e4m3x2 -> f16x2, f16 -> f32, times the group scale, -> bf16x2 (the
           producer's dequant16 for fp8_ds_mla: 6 instructions per 2 values)
  noscale  the same without the multiply (4 per 2 values: fp8's unit scale)
  unpack   e4m3x2 -> f16x2 only
  f16f32   f16 -> f32 only
  fmul     the f32 multiply only
  pack     f32 pair -> bf16x2 only

Prints values converted a clock per SM for each mode, against the 4 warps x
32 lanes x 1 instruction a clock an SM's schedulers can issue.

    PYTHONPATH=. python3 tools/convert_rate.py [--warps 16] [--steps 4096]
"""
import argparse

MODES = ("full", "noscale", "unpack", "f16f32", "fmul", "pack")

SOURCE = r"""
{% include "common/types.cuh.j2" %}
{% include "common/fp8.cuh.j2" %}
constexpr int MODE = {{ mode }};   // index in convert_rate.MODES
// Four independent chains a thread (w[k]: each step's input is the previous
// step's output, so nothing can be hoisted), sixteen warps an SM: throughput,
// not latency, bounds every mode.
extern "C" __global__ void convert_rate(const u32* seed, float scale, int steps, u32* sink) {
    u32 w[4];
    float f[4];
#pragma unroll
    for (int k = 0; k < 4; ++k) {
        w[k] = seed[(threadIdx.x + k) & 255];
        f[k] = __uint_as_float(w[k] & 0x3fffffffu);
    }
    for (int s = 0; s < steps; ++s) {
#pragma unroll
        for (int k = 0; k < 4; ++k) {
            if constexpr (MODE <= 1) {   // the producer's dequant16 for one word (4 values)
                const u32 h0 = e4m3x2_to_f16x2(w[k] & 0xffffu), h1 = e4m3x2_to_f16x2(w[k] >> 16);
                const float m = MODE == 0 ? scale : 1.f;
                const u32 a = MODE == 0 ? pack2<false>(half_lo(h0) * m, half_hi(h0) * m)
                                        : pack2<false>(half_lo(h0), half_hi(h0));
                const u32 b = MODE == 0 ? pack2<false>(half_lo(h1) * m, half_hi(h1) * m)
                                        : pack2<false>(half_lo(h1), half_hi(h1));
                w[k] = __byte_perm(a, b, 0x7531);   // the next 4 e4m3 values: one byte of each half
            } else if constexpr (MODE == 2) {
                w[k] = e4m3x2_to_f16x2(w[k] & 0xffffu);
            } else if constexpr (MODE == 3) {
                f[k] = half_lo(__float_as_uint(f[k]));
            } else if constexpr (MODE == 4) {
                f[k] = f[k] * scale;
            } else {
                w[k] = pack2<false>(__uint_as_float(w[k]), __uint_as_float(w[k]));
            }
        }
    }
    u32 acc = 0;
#pragma unroll
    for (int k = 0; k < 4; ++k) acc ^= w[k] ^ __float_as_uint(f[k]);
    if (acc == 0x9e3779b9u) sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;   // keeps the work
}
"""

# values a step converts per thread: 4 words x 4 values (full, noscale); 4 x 2 (unpack:
# an e4m3 pair a word); one value a chain (f16f32, fmul); 4 x 2 (pack: an f32 pair)
VALUES_PER_STEP = {"full": 16, "noscale": 16, "unpack": 8, "f16f32": 4, "fmul": 4, "pack": 8}


def render(mode: str) -> str:
    from mla_cupy.render import _environment
    return _environment().from_string(SOURCE).render(mode=MODES.index(mode))


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--warps", type=int, default=16, help="warps a CTA (one CTA an SM)")
    ap.add_argument("--steps", type=int, default=4096)
    ap.add_argument("--modes", default=",".join(MODES))
    args = ap.parse_args()
    import cupy
    import numpy as np

    from mla_cupy import compiler
    dev = cupy.cuda.Device()
    sms = dev.attributes["MultiProcessorCount"]
    clock_khz = dev.attributes["ClockRate"]
    seed = cupy.asarray(np.random.default_rng(0).integers(0, 2**32, 256, dtype=np.uint64).astype(np.uint32))
    threads = 32 * args.warps
    sink = cupy.zeros(sms * threads, dtype=cupy.uint32)
    for mode in args.modes.split(","):
        mod = cupy.RawModule(code=render(mode), options=(*compiler.BASE_OPTIONS, f"-arch={compiler.device_arch(0)}"),
                             backend="nvrtc")
        kernel = mod.get_function("convert_rate")
        launch = lambda: kernel((sms,), (threads,), (seed, np.float32(0.37), np.int32(args.steps), sink))
        launch()
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        times = []
        for _ in range(5):
            start.record()
            launch()
            stop.record()
            stop.synchronize()
            times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e-3)
        seconds = float(np.median(times))
        values = sms * threads * args.steps * VALUES_PER_STEP[mode]
        per_clk_sm = values / (seconds * clock_khz * 1e3) / sms
        print(f"{mode:8s} {seconds * 1e6:9.1f} us  {per_clk_sm:6.1f} values/clk/SM "
              f"(an SM issues 128 lane-instructions a clock)", flush=True)


if __name__ == "__main__":
    main()
