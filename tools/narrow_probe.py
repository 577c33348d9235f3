"""Checks on the H200 the three warpgroup-MMA forms a keys-as-M ("narrow") decode
kernel would be built from, before anyone builds it (NOTES.md session 11: at 16
rows a 64-row wgmma does 4x the useful tensor work, which bounds dense fp8 h16 at
~187 us against a target of ~183).

One warpgroup, one 64-key tile of the decode kernels' shared-memory layout (nine
128-byte swizzled column chunks of 64 rows: kernels/hopper/wgmma.cuh.j2's
sw128_offset), sixteen query rows:
  S^T = K Q^T       wgmma m64n16k16, A = the key tile (K-major, as the decode
                    kernels' QK^T reads it), B = the 16 query rows (K-major)
  max_h             each query row's max over the 64 keys: the accumulator's rows
                    are keys, so the reduction crosses lanes (shuffles) and the four
                    warps (shared memory); P^T = bf16(exp2(S^T - max)) written back
                    in the B layout of the next MMA
  O^T = V^T P^T     wgmma m64n16k16 per 64 latent columns, A = the same key tile
                    read transposed (tnspA: its V columns are the M dimension), B =
                    P^T (K-major: each query row's 64 keys in one 128-byte row)
Each output is compared with NumPy on random bf16 inputs (PASS/FAIL and the worst
error); the O^T check takes the kernel's own P^T, so the MMA and the softmax are
checked apart.

--rate then times the math of that form alone, every SM busy: a CTA a SM, one or two
math warpgroups, each running `--tiles` 64-key tiles out of one resident tile
(no loads) with the online softmax a decode kernel needs (the row max across the
warps, exp2, O^T rescaled, P^T through shared memory).  It prints keys a microsecond
per SM, the number to hold against what the loads deliver (dense bf16 h16 needs ~27
at the memory floor; the 64-row ring's math alone does ~23.5, NOTES.md session 11).

    PYTHONPATH=. python3 tools/narrow_probe.py [--seed N] [--rate [--tiles 2048]]
"""
import argparse
import sys

import numpy as np

KEYS, ROWS, D_QK, D_V = 64, 16, 576, 512
CHUNKS = D_QK // 64

# Both kernels: the tile shapes, shared memory for `wgs` math warpgroups (a P^T slot
# and a row-max buffer each), the V^T MMA and the swizzled tile loads.
PRELUDE = r"""
{% include "common/types.cuh.j2" %}
{% include "common/mma.cuh.j2" %}
typedef unsigned long long u64;
constexpr int BLOCK_N = 16;                  // wgmma N: the query rows
constexpr int S_REGS = BLOCK_N / 2, P_WORDS = BLOCK_N / 4;
constexpr int KEYS = {{ keys }}, ROWS = {{ rows }}, D_QK = {{ d_qk }}, D_V = {{ d_v }};
constexpr int CHUNKS = D_QK / 64;
constexpr int KV_CHUNK_BYTES = KEYS * 128, Q_CHUNK_BYTES = ROWS * 128;
constexpr int WGS = {{ wgs }};               // math warpgroups
constexpr int SMEM_K = 0, SMEM_Q = CHUNKS * KV_CHUNK_BYTES, SMEM_PT = SMEM_Q + CHUNKS * Q_CHUNK_BYTES;
constexpr int SMEM_MAX = SMEM_PT + WGS * ROWS * 128;    // per warpgroup: [4 warps][ROWS] partial maxima
static_assert(SMEM_MAX + WGS * 4 * ROWS * 4 + 1024 == {{ smem_bytes }}, "narrow_probe.smem_bytes disagrees");
{% include "hopper/wgmma.cuh.j2" %}

// O^T(64 latent columns x 16 rows) (+)= V^T(64 x 16 keys) P^T(16 keys x 16 rows):
// A read MN-major from the key tile (tnspA), B K-major.
__device__ __forceinline__ void wgmma_vt(float (&d)[8], u64 desc_vt, u64 desc_pt, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %10, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7 }, %8, %9, p, 1, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "l"(desc_vt), "l"(desc_pt), "r"(accumulate));
}
// The key tile and the query rows, swizzled as the decode kernels lay them out, by
// every thread of the block.
__device__ __forceinline__ void load_tiles(unsigned char* smem, const u16* k, const u16* q) {
    for (int i = threadIdx.x; i < KEYS * CHUNKS * 8; i += blockDim.x) {
        const int r = i / (CHUNKS * 8), j = i % (CHUNKS * 8);
        *reinterpret_cast<uint4*>(smem + SMEM_K + sw128_offset<KV_CHUNK_BYTES>(r, j)) =
            reinterpret_cast<const uint4*>(k + r * D_QK)[j];
    }
    for (int i = threadIdx.x; i < ROWS * CHUNKS * 8; i += blockDim.x) {
        const int r = i / (CHUNKS * 8), j = i % (CHUNKS * 8);
        *reinterpret_cast<uint4*>(smem + SMEM_Q + sw128_offset<Q_CHUNK_BYTES>(r, j)) =
            reinterpret_cast<const uint4*>(q + r * D_QK)[j];
    }
    fence_async_smem();
    __syncthreads();
}
"""

SOURCE = PRELUDE + r"""
extern "C" __global__ void __launch_bounds__(128, 1)
narrow_probe(const u16* k, const u16* q, float* st, float* row_max, u16* pt_out, float* ot) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const u32 base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    unsigned char* smem = smem_raw + (base - smem_addr(smem_raw));
    const int t = threadIdx.x, warp = t >> 5, lane = t & 31;
    load_tiles(smem, k, q);

    // ---- S^T = K Q^T: 64 keys x 16 rows ----
    float s[S_REGS];
    const u64 k_desc = sw128_desc(base + SMEM_K, 16, 1024), q_desc = sw128_desc(base + SMEM_Q, 16, 1024);
    wgmma_fence();
#pragma unroll
    for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
        for (int kk = 0; kk < 4; ++kk)
            wgmma_qk(s, desc_at(k_desc, c * KV_CHUNK_BYTES + kk * 32), desc_at(q_desc, c * Q_CHUNK_BYTES + kk * 32),
                     c + kk);
    wgmma_commit();
    wgmma_wait<0>();
    fence_regs(s);
    // accumulator i: key 16 warp + lane / 4 + 8 ((i >> 1) & 1), row 8 (i >> 2) + 2 (lane & 3) + (i & 1)
    const int key0 = 16 * warp + (lane >> 2);
    auto row_of = [&](int i) { return 8 * (i >> 2) + 2 * (lane & 3) + (i & 1); };
    auto key_of = [&](int i) { return key0 + 8 * ((i >> 1) & 1); };
#pragma unroll
    for (int i = 0; i < S_REGS; ++i) st[key_of(i) * ROWS + row_of(i)] = s[i];

    // ---- each row's max over the keys: two keys a thread, 8 lanes, 4 warps ----
    float mx[4];                                  // rows row_of(0), row_of(1), row_of(4), row_of(5)
#pragma unroll
    for (int g = 0; g < 2; ++g)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            float m = fmaxf(s[4 * g + e], s[4 * g + 2 + e]);
#pragma unroll
            for (int sh = 4; sh < 32; sh <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, sh));
            mx[2 * g + e] = m;
        }
    float* sMax = reinterpret_cast<float*>(smem + SMEM_MAX);
    if (lane < 4) {
#pragma unroll
        for (int g = 0; g < 2; ++g)
#pragma unroll
            for (int e = 0; e < 2; ++e) sMax[warp * ROWS + 8 * g + 2 * lane + e] = mx[2 * g + e];
    }
    bar_sync_warpgroup(1);
#pragma unroll
    for (int g = 0; g < 2; ++g)
#pragma unroll
        for (int e = 0; e < 2; ++e) {
            const int r = 8 * g + 2 * (lane & 3) + e;
            mx[2 * g + e] = fmaxf(fmaxf(sMax[r], sMax[ROWS + r]), fmaxf(sMax[2 * ROWS + r], sMax[3 * ROWS + r]));
        }
    if (t < ROWS) row_max[t] = fmaxf(fmaxf(sMax[t], sMax[ROWS + t]), fmaxf(sMax[2 * ROWS + t], sMax[3 * ROWS + t]));
    // P^T[row][key] = bf16(exp2(S - max)), K-major: row r's 64 keys are one swizzled 128-byte row
    unsigned char* pt = smem + SMEM_PT;
#pragma unroll
    for (int i = 0; i < S_REGS; ++i) {
        const int r = row_of(i), key = key_of(i);
        const float p = exp2f(s[i] - mx[2 * (i >> 2) + (i & 1)]);
        const u32 h = pack2<false>(p, 0.f) & 0xffffu;
        *reinterpret_cast<u16*>(pt + sw128_offset<ROWS * 128>(r, key >> 3) + 2 * (key & 7)) = static_cast<u16>(h);
    }
    fence_async_smem();
    bar_sync_warpgroup(1);
    for (int i = t; i < ROWS * KEYS; i += 128) {
        const int r = i / KEYS, key = i % KEYS;
        pt_out[i] = *reinterpret_cast<const u16*>(pt + sw128_offset<ROWS * 128>(r, key >> 3) + 2 * (key & 7));
    }

    // ---- O^T = V^T P^T: 8 x (64 latent columns x 16 rows) ----
    float o[D_V / 64][8];
    const u64 pt_desc = sw128_desc(base + SMEM_PT, 16, 1024);
    wgmma_fence();
#pragma unroll
    for (int c = 0; c < D_V / 64; ++c)
#pragma unroll
        for (int ks = 0; ks < KEYS / 16; ++ks)
            wgmma_vt(o[c], sw128_desc(base + SMEM_K + c * KV_CHUNK_BYTES + ks * 16 * 128, KV_CHUNK_BYTES, 1024),
                     desc_at(pt_desc, ks * 32), ks);
    wgmma_commit();
    wgmma_wait<0>();
#pragma unroll
    for (int c = 0; c < D_V / 64; ++c) {
        fence_regs(o[c]);
#pragma unroll
        for (int i = 0; i < 8; ++i) ot[(64 * c + key_of(i)) * ROWS + row_of(i)] = o[c][i];
    }
}
"""


RATE_SOURCE = PRELUDE + r"""
// Every warpgroup: `tiles` times S^T = K Q^T, the online softmax, O^T += V^T P^T,
// out of the one resident key tile (its bytes are random: only the time matters).
extern "C" __global__ void __launch_bounds__(256, 1)
narrow_rate(const u16* k, const u16* q, int tiles, float* sink) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const u32 base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    unsigned char* smem = smem_raw + (base - smem_addr(smem_raw));
    const int wg = threadIdx.x >> 7, t = threadIdx.x & 127, warp = t >> 5, lane = t & 31;
    load_tiles(smem, k, q);
    const u64 k_desc = sw128_desc(base + SMEM_K, 16, 1024), q_desc = sw128_desc(base + SMEM_Q, 16, 1024);
    const u32 pt_base = base + SMEM_PT + wg * ROWS * 128;
    const u64 pt_desc = sw128_desc(pt_base, 16, 1024);
    unsigned char* pt = smem + (pt_base - base);
    float* sMax = reinterpret_cast<float*>(smem + SMEM_MAX) + wg * 4 * ROWS;
    const int key0 = 16 * warp + (lane >> 2);
    auto row_of = [&](int i) { return 8 * (i >> 2) + 2 * (lane & 3) + (i & 1); };
    auto key_of = [&](int i) { return key0 + 8 * ((i >> 1) & 1); };
    float o[D_V / 64][8];
#pragma unroll
    for (int c = 0; c < D_V / 64; ++c)
#pragma unroll
        for (int i = 0; i < 8; ++i) o[c][i] = 0.f;
    float m_run[4] = {-MLA_INF, -MLA_INF, -MLA_INF, -MLA_INF}, l_run[4] = {0.f, 0.f, 0.f, 0.f};
    for (int tile = 0; tile < tiles; ++tile) {
        float s[S_REGS];
        wgmma_fence();
#pragma unroll
        for (int c = 0; c < CHUNKS; ++c)
#pragma unroll
            for (int kk = 0; kk < 4; ++kk)
                wgmma_qk(s, desc_at(k_desc, c * KV_CHUNK_BYTES + kk * 32),
                         desc_at(q_desc, c * Q_CHUNK_BYTES + kk * 32), c + kk);
        wgmma_commit();
        wgmma_wait<0>();                 // S^T, and the previous tile's O^T
        fence_regs(s);
#pragma unroll
        for (int c = 0; c < D_V / 64; ++c) fence_regs(o[c]);
        float mx[4];
#pragma unroll
        for (int g = 0; g < 2; ++g)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                float m = fmaxf(s[4 * g + e], s[4 * g + 2 + e]);
#pragma unroll
                for (int sh = 4; sh < 32; sh <<= 1) m = fmaxf(m, __shfl_xor_sync(0xffffffffu, m, sh));
                mx[2 * g + e] = m;
            }
        if (lane < 4) {
#pragma unroll
            for (int g = 0; g < 2; ++g)
#pragma unroll
                for (int e = 0; e < 2; ++e) sMax[warp * ROWS + 8 * g + 2 * lane + e] = mx[2 * g + e];
        }
        bar_sync_warpgroup(1 + wg);
        float alpha[4];
#pragma unroll
        for (int g = 0; g < 2; ++g)
#pragma unroll
            for (int e = 0; e < 2; ++e) {
                const int r = 8 * g + 2 * (lane & 3) + e, x = 2 * g + e;
                const float m = fmaxf(fmaxf(sMax[r], sMax[ROWS + r]), fmaxf(sMax[2 * ROWS + r], sMax[3 * ROWS + r]));
                const float m_new = fmaxf(m_run[x], m * 0.0625f);
                alpha[x] = exp2f(m_run[x] - m_new);
                m_run[x] = m_new;
            }
        bar_sync_warpgroup(3 + wg);                  // sMax read by all before the next tile writes it
#pragma unroll
        for (int i = 0; i < S_REGS; ++i) {
            const int x = 2 * (i >> 2) + (i & 1);
            const float p = exp2f(s[i] * 0.0625f - m_run[x]);
            l_run[x] = l_run[x] * ((i & 2) == 0 ? alpha[x] : 1.f) + p;   // rescaled at its first term
            const int r = row_of(i), key = key_of(i);
            *reinterpret_cast<u16*>(pt + sw128_offset<ROWS * 128>(r, key >> 3) + 2 * (key & 7)) =
                static_cast<u16>(pack2<false>(p, 0.f) & 0xffffu);
        }
#pragma unroll
        for (int c = 0; c < D_V / 64; ++c)
#pragma unroll
            for (int i = 0; i < 8; ++i) o[c][i] *= alpha[2 * (i >> 2) + (i & 1)];
        fence_async_smem();
        bar_sync_warpgroup(1 + wg);
        wgmma_fence();
#pragma unroll
        for (int c = 0; c < D_V / 64; ++c)
#pragma unroll
            for (int ks = 0; ks < KEYS / 16; ++ks)
                wgmma_vt(o[c], sw128_desc(base + SMEM_K + c * KV_CHUNK_BYTES + ks * 16 * 128, KV_CHUNK_BYTES, 1024),
                         desc_at(pt_desc, ks * 32), 1);
        wgmma_commit();
    }
    wgmma_wait<0>();
    float acc = l_run[0] + l_run[1] + l_run[2] + l_run[3];
#pragma unroll
    for (int c = 0; c < D_V / 64; ++c) {
        fence_regs(o[c]);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc += o[c][i];
    }
    sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""


def render_rate() -> str:
    from mla_cupy.render import _environment
    return _environment().from_string(RATE_SOURCE).render(keys=KEYS, rows=ROWS, d_qk=D_QK, d_v=D_V, block_n=16,
                                                          mma_type="bf16", wgs=2, smem_bytes=smem_bytes(2))


# ---- what the probes share (tools/rs_probe.py imports these) ----
def probe_args(doc: str, rate_help: str, tiles_help: str):
    """The probes' command line: --seed, --rate, --tiles."""
    ap = argparse.ArgumentParser(description=doc.splitlines()[0])
    ap.add_argument("--seed", type=int, default=None)
    ap.add_argument("--rate", action="store_true", help=rate_help)
    ap.add_argument("--tiles", type=int, default=2048, help=tiles_help)
    return ap.parse_args()


def seeded_rng(tool: str, seed):
    """A generator from ``seed`` (a fresh one when None), the seed printed first."""
    seed = seed if seed is not None else int(np.random.SeedSequence().entropy % 2**31)
    print(f"{tool} seed {seed}", flush=True)
    return seed, np.random.default_rng(seed)


def load_kernels(source: str, names, smem: int, options=None) -> list:
    """``names`` of ``source`` compiled by NVRTC for device 0 (the decode kernels'
    options unless given), each allowed ``smem`` bytes of dynamic shared memory."""
    import cupy
    from mla_cupy import compiler
    mod = cupy.RawModule(code=source, backend="nvrtc",
                         options=options or (*compiler.BASE_OPTIONS, f"-arch={compiler.device_arch(0)}"))
    kernels = [mod.get_function(n) for n in names]
    for k in kernels:
        k.max_dynamic_shared_size_bytes = smem
    return kernels


def median_us(kernel, launch, smem: int, repeats: int = 5) -> float:
    """Median µs of ``kernel(*launch)`` between CUDA events, after one warm-up launch."""
    import cupy
    kernel(*launch, shared_mem=smem)
    times = []
    for _ in range(repeats):
        start, stop = cupy.cuda.Event(), cupy.cuda.Event()
        start.record()
        kernel(*launch, shared_mem=smem)
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
    return float(np.median(times))


def time_rate(tiles: int, repeats: int = 5) -> None:
    """Keys a microsecond per SM of the narrow math alone, one and two warpgroups a CTA."""
    import cupy
    (kernel,) = load_kernels(render_rate(), ["narrow_rate"], smem_bytes(2))
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    rng = np.random.default_rng(0)
    d_k = cupy.asarray((rng.standard_normal((KEYS, D_QK)) * 0.1).astype(np.float32)).astype(cupy.float16).view(cupy.uint16)
    d_q = cupy.asarray((rng.standard_normal((ROWS, D_QK)) * 0.1).astype(np.float32)).astype(cupy.float16).view(cupy.uint16)
    sink = cupy.zeros(sms * 256, dtype=np.float32)
    for wgs in (1, 2):
        us = median_us(kernel, ((sms,), (128 * wgs,), (d_k, d_q, np.int32(tiles), sink)), smem_bytes(2), repeats)
        keys = tiles * KEYS * wgs
        print(f"narrow math, {wgs} warpgroup{'s' if wgs > 1 else ''} a CTA, {sms} CTAs: {us:.1f} us for {tiles} tiles "
              f"a warpgroup: {keys / us:.1f} keys/us/SM ({2 * ROWS * (D_QK + D_V) * keys * sms / us / 1e6:.0f} "
              f"useful TFLOP/s)", flush=True)


def render() -> str:
    from mla_cupy.render import _environment
    return _environment().from_string(SOURCE).render(keys=KEYS, rows=ROWS, d_qk=D_QK, d_v=D_V, block_n=16,
                                                     mma_type="bf16", wgs=1, smem_bytes=smem_bytes(1))


def smem_bytes(wgs: int = 1) -> int:
    """The kernels' dynamic shared memory: the key tile, the query rows, a P^T slot and
    a row-max buffer per math warpgroup, and 1 KiB to align the base."""
    return CHUNKS * KEYS * 128 + CHUNKS * ROWS * 128 + wgs * (ROWS * 128 + 4 * ROWS * 4) + 1024


def reference(k: np.ndarray, q: np.ndarray, pt: np.ndarray):
    """(S^T, row max, P^T from S^T, O^T from the given P^T), float64 from bf16 inputs."""
    st = k.astype(np.float64) @ q.astype(np.float64).T            # [keys, rows]
    mx = st.max(axis=0)
    p = np.exp2(st - mx[None, :]).T                               # [rows, keys]
    ot = k[:, :D_V].astype(np.float64).T @ pt.astype(np.float64).T  # [D_V, rows]
    return st, mx, p, ot


def check(name, got, want, tol) -> bool:
    err = np.abs(got.astype(np.float64) - want)
    worst = np.unravel_index(np.argmax(err), err.shape)
    ok = bool(np.all(np.isfinite(got))) and float(err.max()) <= tol * max(1.0, float(np.abs(want).max()))
    print(f"{'PASS' if ok else 'FAIL'} {name}: max|got-ref| = {err.max():.3e} at {tuple(int(i) for i in worst)} "
          f"(got {float(got[worst]):.5g}, ref {float(want[worst]):.5g}), tol {tol:g} x max|ref|", flush=True)
    return ok


def main():
    args = probe_args(__doc__, "also time the narrow math alone (keys/us/SM)", "--rate: tiles a warpgroup")
    import cupy
    import ml_dtypes
    seed, rng = seeded_rng("narrow_probe", args.seed)
    bf16 = ml_dtypes.bfloat16
    k = rng.standard_normal((KEYS, D_QK)).astype(bf16)
    q = (rng.standard_normal((ROWS, D_QK)) / np.sqrt(D_QK)).astype(bf16)
    (kernel,) = load_kernels(render(), ["narrow_probe"], smem_bytes(1))
    d_k = cupy.asarray(k.view(np.uint16))
    d_q = cupy.asarray(q.view(np.uint16))
    st = cupy.full((KEYS, ROWS), np.nan, dtype=np.float32)
    mx = cupy.full((ROWS,), np.nan, dtype=np.float32)
    pt = cupy.zeros((ROWS, KEYS), dtype=np.uint16)
    ot = cupy.full((D_V, ROWS), np.nan, dtype=np.float32)
    kernel((1,), (128,), (d_k, d_q, st, mx, pt, ot), shared_mem=smem_bytes(1))
    cupy.cuda.runtime.deviceSynchronize()
    pt_host = cupy.asnumpy(pt).view(bf16)
    ref_st, ref_mx, ref_p, ref_ot = reference(k, q, pt_host)
    ok = check("S^T = K Q^T (m64n16k16, both K-major)", cupy.asnumpy(st), ref_st, 1e-5)
    ok &= check("row max over the keys (shuffles + 4 warps)", cupy.asnumpy(mx), ref_mx, 1e-5)
    ok &= check("P^T = bf16(exp2(S^T - max)) in the B layout", pt_host.astype(np.float64), ref_p, 8e-3)
    ok &= check("O^T = V^T P^T (m64n16k16, A transposed from the key tile)", cupy.asnumpy(ot), ref_ot, 1e-5)
    print("narrow_probe:", "all PASS" if ok else f"FAIL (seed {seed})", flush=True)
    if args.rate:
        time_rate(args.tiles)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
