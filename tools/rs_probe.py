"""Checks on the H200 the register-dequant form of the narrow kernel for byte records,
before anyone builds it (tools/results/NOTES.md session 12: the narrow fp8 kernel moves
~2600 clocks of shared memory a 64-key tile through its dequantised bf16 tiles; building
wgmma's A operand in registers straight from the records needs about a third).

One warpgroup, one 64-key tile of fp8_ds_mla records (656 bytes: 512 e4m3 latent
values, four float32 group scales, 64 bf16 rope values) in shared memory as the bulk
copies land them, sixteen bf16 query rows:
  S^T = K Q^T   wgmma m64n16k16 with A in registers: thread q (lane % 4) of a quad takes
                columns 64m + 16q .. 64m + 16q + 15 of its two keys for chunk m (one
                16-byte load a key), so the k positions of k-step s map to columns
                64m + 16 ((k % 8) / 2) + 4s + (k % 2) + 2 (k / 8); Q sits in shared
                memory permuted to match (B, K-major, swizzled as the decode kernels')
  O^T = V^T P^T wgmma m64n16k16 per chunk c with A = V^T in registers: row pair
                G = 8 warp + lane / 4 owns latent columns 16G .. 16G + 15, row r of chunk
                c being column 16G + 2c + (r >= 8); a thread loads its 16 keys' 16 bytes
                once a tile and pairs two keys' bytes with one PRMT per register pair
Both dequantise as the producer does: bf16(f16(e4m3) x the key's group scale).  Each
output is compared with NumPy (PASS/FAIL and the worst error); P^T is an input.

--rate then times that math alone, every SM busy (a CTA an SM, one warpgroup, `--tiles`
tiles out of the one resident tile, no softmax): keys a microsecond per SM, to hold
against the ~43 a dense fp8_ds_mla b128 h16 call needs for its 183 us target.

    PYTHONPATH=. python3 tools/rs_probe.py [--seed N] [--rate [--tiles 2048]]
"""
import sys

import numpy as np

from narrow_probe import check, load_kernels, median_us, probe_args, seeded_rng

from mla_cupy import records

KEYS, ROWS = 64, 16
D_QK, D_V, D_ROPE = records.D_QK, records.D_V, records.D_ROPE
# fp8_ds_mla: [512 e4m3 | 4 float32 scales | 64 bf16] (docs/spec.md section 4)
REC = records.row_bytes("fp8_ds_mla")
SCALES_AT, ROPE_AT = records.scales_at("fp8_ds_mla"), records.rope_at("fp8_ds_mla")
CHUNKS = D_QK // 64

SOURCE = r"""
{% include "common/types.cuh.j2" %}
{% include "common/mma.cuh.j2" %}
{% include "common/fp8.cuh.j2" %}
typedef unsigned long long u64;
constexpr int BLOCK_N = 16;                  // (wgmma.cuh.j2's 64-row helpers, unused)
constexpr int S_REGS = BLOCK_N / 2, P_WORDS = BLOCK_N / 4;
constexpr int KEYS = {{ keys }}, ROWS = {{ rows }}, D_QK = {{ d_qk }}, D_V = {{ d_v }}, REC = {{ rec }};
constexpr int SCALES_AT = {{ scales_at }}, ROPE_AT = {{ rope_at }};
constexpr int CHUNKS = D_QK / 64, V_CHUNKS = D_V / 64;
constexpr int Q_CHUNK_BYTES = ROWS * 128, PT_BYTES = ROWS * 128;
constexpr int SMEM_Q = 0, SMEM_PT = SMEM_Q + CHUNKS * Q_CHUNK_BYTES, SMEM_REC = SMEM_PT + PT_BYTES;
static_assert(SMEM_REC + KEYS * REC + 1024 == {{ smem_bytes }}, "rs_probe.smem_bytes disagrees");
{% include "hopper/wgmma.cuh.j2" %}

// D(64 x 16) (+)= A(64 x 16, registers) B(16 x 16, K-major in shared memory).
__device__ __forceinline__ void wgmma_rs(float (&d)[8], const u32 (&a)[4], u64 desc_b, int accumulate) {
    asm volatile(
        "{\n.reg .pred p;\nsetp.ne.b32 p, %13, 0;\n"
        "wgmma.mma_async.sync.aligned.m64n16k16.f32.bf16.bf16 "
        "{ %0, %1, %2, %3, %4, %5, %6, %7 }, { %8, %9, %10, %11 }, %12, p, 1, 1, 0;\n}\n"
        : "+f"(d[0]), "+f"(d[1]), "+f"(d[2]), "+f"(d[3]), "+f"(d[4]), "+f"(d[5]), "+f"(d[6]), "+f"(d[7])
        : "r"(a[0]), "r"(a[1]), "r"(a[2]), "r"(a[3]), "l"(desc_b), "r"(accumulate));
}
// Two e4m3 bytes (low = element 0) times their scales -> bf16x2.
__device__ __forceinline__ u32 dq2(u32 two, float s_lo, float s_hi) {
    const u32 h = e4m3x2_to_f16x2(two & 0xffffu);
    return pack2<false>(half_lo(h) * s_lo, half_hi(h) * s_hi);
}
// K position k of k-step s of chunk m: the Q column it multiplies.
__device__ __forceinline__ int q_col(int m, int s, int k) {
    return 64 * m + 16 * ((k % 8) / 2) + 4 * s + (k % 2) + 2 * (k / 8);
}

// The records, Q permuted and P^T into shared memory, by every thread.
__device__ __forceinline__ void load_tile(unsigned char* smem, const unsigned char* rec, const u16* q,
                                          const u16* pt) {
    for (int i = threadIdx.x; i < KEYS * REC / 16; i += blockDim.x)
        reinterpret_cast<uint4*>(smem + SMEM_REC)[i] = reinterpret_cast<const uint4*>(rec)[i];
    // Q: position pair (p, p + 1) of chunk m (k = p % 16 even) holds columns (c, c + 1)
    for (int i = threadIdx.x; i < ROWS * D_QK / 2; i += blockDim.x) {
        const int n = i / (D_QK / 2), pair = i % (D_QK / 2), m = pair / 32, p = 2 * (pair % 32);
        const int col = q_col(m, p / 16, p % 16);
        *reinterpret_cast<u32*>(smem + SMEM_Q + m * Q_CHUNK_BYTES + sw128_offset<Q_CHUNK_BYTES>(n, (p % 64) / 8)
                                + 2 * (p % 8)) = *reinterpret_cast<const u32*>(q + n * D_QK + col);
    }
    for (int i = threadIdx.x; i < ROWS * KEYS; i += blockDim.x) {
        const int r = i / KEYS, key = i % KEYS;
        *reinterpret_cast<u16*>(smem + SMEM_PT + sw128_offset<PT_BYTES>(r, key >> 3) + 2 * (key & 7)) = pt[i];
    }
    fence_async_smem();
    __syncthreads();
}

// S^T(64 keys x 16 rows) of the tile, A built from the records chunk by chunk.
__device__ __forceinline__ void st_rs(const unsigned char* smem, u32 base, float (&s)[8]) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    const unsigned char* r1 = smem + SMEM_REC + (16 * warp + g) * REC;
    const unsigned char* r2 = r1 + 8 * REC;
    const float4 sc1 = *reinterpret_cast<const float4*>(r1 + SCALES_AT);
    const float4 sc2 = *reinterpret_cast<const float4*>(r2 + SCALES_AT);
    const float s1[4] = {sc1.x, sc1.y, sc1.z, sc1.w}, s2[4] = {sc2.x, sc2.y, sc2.z, sc2.w};
    const u64 q_desc = sw128_desc(base + SMEM_Q, 16, 1024);
    u32 a[2][4][4];                                    // two chunks in flight: [chunk % 2][k-step][register]
#pragma unroll
    for (int m = 0; m < CHUNKS; ++m) {
        if (m >= 2) wgmma_wait<1>();                   // chunk m - 2's MMAs read a[m % 2]
        u32 (&am)[4][4] = a[m % 2];
        if (m < D_V / 64) {
            const uint4 w1 = *reinterpret_cast<const uint4*>(r1 + 64 * m + 16 * q);
            const uint4 w2 = *reinterpret_cast<const uint4*>(r2 + 64 * m + 16 * q);
            const u32 x1[4] = {w1.x, w1.y, w1.z, w1.w}, x2[4] = {w2.x, w2.y, w2.z, w2.w};
            const float f1 = s1[m / 2], f2 = s2[m / 2];
#pragma unroll
            for (int st = 0; st < 4; ++st) {
                am[st][0] = dq2(x1[st], f1, f1);
                am[st][1] = dq2(x2[st], f2, f2);
                am[st][2] = dq2(x1[st] >> 16, f1, f1);
                am[st][3] = dq2(x2[st] >> 16, f2, f2);
            }
        } else {                                       // the bf16 rope chunk: 32 bytes a key
            const uint4* p1 = reinterpret_cast<const uint4*>(r1 + ROPE_AT + 32 * q);
            const uint4* p2 = reinterpret_cast<const uint4*>(r2 + ROPE_AT + 32 * q);
            const uint4 a1 = p1[0], b1 = p1[1], a2 = p2[0], b2 = p2[1];
            const u32 x1[8] = {a1.x, a1.y, a1.z, a1.w, b1.x, b1.y, b1.z, b1.w};
            const u32 x2[8] = {a2.x, a2.y, a2.z, a2.w, b2.x, b2.y, b2.z, b2.w};
#pragma unroll
            for (int st = 0; st < 4; ++st) {
                am[st][0] = x1[2 * st];
                am[st][1] = x2[2 * st];
                am[st][2] = x1[2 * st + 1];
                am[st][3] = x2[2 * st + 1];
            }
        }
        wgmma_fence();                                 // the A registers were just written
#pragma unroll
        for (int st = 0; st < 4; ++st) {
            fence_regs(am[st]);
            wgmma_rs(s, am[st], desc_at(q_desc, m * Q_CHUNK_BYTES + st * 32), m + st);
        }
        wgmma_commit();
    }
    wgmma_wait<0>();
    fence_regs(s);
}

// O^T(8 x (64 permuted latent columns x 16 rows)) of the tile, A = V^T built from the
// records: the thread's 16 keys' columns 16G .. 16G + 15, paired by PRMT.
__device__ __forceinline__ void ot_rs(const unsigned char* smem, u32 base, float (&o)[V_CHUNKS][8]) {
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q = lane & 3;
    const int G = 8 * warp + g;                        // row pair: columns 16G .. 16G + 15
    const u64 pt_desc = sw128_desc(base + SMEM_PT, 16, 1024);
    u32 a[2][V_CHUNKS][4];                             // two k-steps in flight
#pragma unroll
    for (int ks = 0; ks < KEYS / 16; ++ks) {
        if (ks >= 2) wgmma_wait<1>();
        // keys 16 ks + 2q + {0, 1, 8, 9}
        uint4 w[4];
        float f[4];
#pragma unroll
        for (int e = 0; e < 4; ++e) {
            const unsigned char* r = smem + SMEM_REC + (16 * ks + 2 * q + (e & 1) + 8 * (e >> 1)) * REC;
            w[e] = *reinterpret_cast<const uint4*>(r + 16 * G);
            f[e] = reinterpret_cast<const float*>(r + SCALES_AT)[G / 8];
        }
#pragma unroll
        for (int c = 0; c < V_CHUNKS; ++c) {
            const u32 sel = (c & 1) ? 0x7362u : 0x5140u;   // byte 2c of each key, then byte 2c + 1
            auto word = [&](const uint4& v) { const u32 x[4] = {v.x, v.y, v.z, v.w}; return x[c / 2]; };
            const u32 lo = __byte_perm(word(w[0]), word(w[1]), sel);   // keys 2q, 2q + 1
            const u32 hi = __byte_perm(word(w[2]), word(w[3]), sel);   // keys 2q + 8, 2q + 9
            a[ks % 2][c][0] = dq2(lo, f[0], f[1]);
            a[ks % 2][c][1] = dq2(lo >> 16, f[0], f[1]);
            a[ks % 2][c][2] = dq2(hi, f[2], f[3]);
            a[ks % 2][c][3] = dq2(hi >> 16, f[2], f[3]);
        }
        wgmma_fence();                                 // the A registers were just written
#pragma unroll
        for (int c = 0; c < V_CHUNKS; ++c) {
            fence_regs(a[ks % 2][c]);
            wgmma_rs(o[c], a[ks % 2][c], desc_at(pt_desc, ks * 32), ks);
        }
        wgmma_commit();
    }
    wgmma_wait<0>();
#pragma unroll
    for (int c = 0; c < V_CHUNKS; ++c) fence_regs(o[c]);
}

extern "C" __global__ void __launch_bounds__(128, 1)
rs_probe(const unsigned char* rec, const u16* q, const u16* pt, float* st, float* ot) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const u32 base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    unsigned char* smem = smem_raw + (base - smem_addr(smem_raw));
    const int warp = threadIdx.x >> 5, lane = threadIdx.x & 31, g = lane >> 2, q4 = lane & 3;
    load_tile(smem, rec, q, pt);
    // accumulator i: M index 16 warp + g + 8 ((i >> 1) & 1), row 8 (i >> 2) + 2 q4 + (i & 1)
    auto row_of = [&](int i) { return 8 * (i >> 2) + 2 * q4 + (i & 1); };
    float s[8];
    st_rs(smem, base, s);
#pragma unroll
    for (int i = 0; i < 8; ++i) st[(16 * warp + g + 8 * ((i >> 1) & 1)) * ROWS + row_of(i)] = s[i];
    float o[V_CHUNKS][8];
    ot_rs(smem, base, o);
    const int G = 8 * warp + g;
#pragma unroll
    for (int c = 0; c < V_CHUNKS; ++c)
#pragma unroll
        for (int i = 0; i < 8; ++i) ot[(16 * G + 2 * c + ((i >> 1) & 1)) * ROWS + row_of(i)] = o[c][i];
}

// --rate: `tiles` times S^T and O^T of the resident tile (no softmax, no loads).
extern "C" __global__ void __launch_bounds__(128, 1)
rs_rate(const unsigned char* rec, const u16* q, const u16* pt, int tiles, float* sink) {
    extern __shared__ __align__(1024) unsigned char smem_raw[];
    const u32 base = (smem_addr(smem_raw) + 1023u) & ~1023u;
    unsigned char* smem = smem_raw + (base - smem_addr(smem_raw));
    load_tile(smem, rec, q, pt);
    float acc = 0.f;
    float o[V_CHUNKS][8];
#pragma unroll
    for (int c = 0; c < V_CHUNKS; ++c)
#pragma unroll
        for (int i = 0; i < 8; ++i) o[c][i] = 0.f;
    for (int t = 0; t < tiles; ++t) {
        float s[8];
        st_rs(smem, base, s);
        ot_rs(smem, base, o);
#pragma unroll
        for (int i = 0; i < 8; ++i) acc += s[i];
    }
#pragma unroll
    for (int c = 0; c < V_CHUNKS; ++c)
#pragma unroll
        for (int i = 0; i < 8; ++i) acc += o[c][i];
    sink[blockIdx.x * blockDim.x + threadIdx.x] = acc;
}
"""


def smem_bytes() -> int:
    """Q (permuted), P^T, the tile's records, and 1 KiB to align the base."""
    return CHUNKS * ROWS * 128 + ROWS * 128 + KEYS * REC + 1024


def render() -> str:
    from mla_cupy.render import _environment
    return _environment().from_string(SOURCE).render(
        keys=KEYS, rows=ROWS, d_qk=D_QK, d_v=D_V, rec=REC, scales_at=SCALES_AT, rope_at=ROPE_AT,
        block_n=16, mma_type="bf16", smem_bytes=smem_bytes())


def options(arch: str) -> tuple:
    from mla_cupy import compiler
    return (*compiler.BASE_OPTIONS, f"-arch={arch}", "-ftz=true")   # as the decode kernels


def make_records(rng):
    """(raw records [KEYS, REC] uint8, K [KEYS, D_QK] float64 as the Hopper kernels
    dequantise it: bf16(e4m3 x scale), mla_cupy.reference.dequantize_rows)."""
    import ml_dtypes
    from mla_cupy.reference import dequantize_rows
    lat = np.clip(rng.standard_normal((KEYS, D_V)) * 100, -440, 440).astype(ml_dtypes.float8_e4m3fn)
    scales = (2.0 ** rng.integers(-9, 3, (KEYS, 4)) * rng.uniform(0.5, 1.5, (KEYS, 4))).astype("<f4")
    rope = rng.standard_normal((KEYS, D_ROPE)).astype(ml_dtypes.bfloat16)
    raw = np.zeros((KEYS, REC), np.uint8)
    raw[:, :D_V] = lat.view(np.uint8)
    raw[:, SCALES_AT:ROPE_AT] = scales.view(np.uint8)
    raw[:, ROPE_AT:] = rope.view(np.uint8)
    return raw, dequantize_rows(raw, "fp8_ds_mla", dequantize_to="bfloat16")[0]


def main():
    args = probe_args(__doc__, "also time the math alone (keys/us/SM)", "--rate: tiles a CTA")
    import cupy
    import ml_dtypes
    from mla_cupy import compiler
    seed, rng = seeded_rng("rs_probe", args.seed)
    raw, k = make_records(rng)
    q = (rng.standard_normal((ROWS, D_QK)) / np.sqrt(D_QK)).astype(ml_dtypes.bfloat16)
    pt = rng.uniform(0, 1, (ROWS, KEYS)).astype(ml_dtypes.bfloat16)
    kernel, rate = load_kernels(render(), ["rs_probe", "rs_rate"], smem_bytes(), options(compiler.device_arch(0)))
    d = [cupy.asarray(raw), cupy.asarray(q.view(np.uint16)), cupy.asarray(pt.view(np.uint16))]
    st = cupy.full((KEYS, ROWS), np.nan, np.float32)
    ot = cupy.full((D_V, ROWS), np.nan, np.float32)
    kernel((1,), (128,), (*d, st, ot), shared_mem=smem_bytes())
    cupy.cuda.runtime.deviceSynchronize()
    ref_st = k @ q.astype(np.float64).T                                   # [keys, rows]
    ref_ot = k[:, :D_V].T @ pt.astype(np.float64).T                       # [D_V, rows]
    ok = check("S^T = K Q^T (A from the records in registers, Q permuted)", cupy.asnumpy(st), ref_st, 1e-5)
    ok &= check("O^T = V^T P^T (A = V^T from the records, columns permuted)", cupy.asnumpy(ot), ref_ot, 1e-5)
    print("rs_probe:", "all PASS" if ok else f"FAIL (seed {seed})", flush=True)
    if args.rate:
        sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
        sink = cupy.zeros(sms * 128, np.float32)
        us = median_us(rate, ((sms,), (128,), (*d, np.int32(args.tiles), sink)), smem_bytes())
        print(f"register-dequant math, one warpgroup a CTA, {sms} CTAs: {us:.1f} us for {args.tiles} tiles: "
              f"{args.tiles * KEYS / us:.1f} keys/us/SM (a b128 h16 fp8_ds_mla call needs ~43 for 183 us)",
              flush=True)
    sys.exit(0 if ok else 1)


if __name__ == "__main__":
    main()
