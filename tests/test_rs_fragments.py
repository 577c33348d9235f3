"""A NumPy model of the narrow kernel's RS math (render.narrow_rs: dense fp8_ds_mla and fp8
at 16 rows; kernels/hopper/mla_decode_narrow.cu.j2): the lanes' ldmatrix addresses into a
tile of raw records (render.raw_key_offset: where a key's record lies), the registers ldmatrix gives them
(plain and transposed), the e4m3 -> fp16 conversions and PRMTs that make wgmma A fragments
of them, the K order in which load_q_rs stores Q, and the epilogue's columns.  Each is
written here as the kernel's formula; the model composes them with the PTX ISA's fragment
layouts and checks that S^T and O^T come out as the plain products of the decoded
records.  A wrong address, byte selector or permutation in the kernel's formulas shows
here, on the CPU."""
import ml_dtypes
import numpy as np
import pytest

from mla_cupy import tensor_map
from mla_cupy.render import narrow_rs, narrow_tma_raw, raw_group, raw_key_offset, raw_piece_offset, raw_tile_bytes
from mla_cupy.variants import parse

D_LATENT = 512
KEYS, ROWS = 64, 16
# (variant, its record's bytes, the rope's offset and width, whether the rope is bf16)
LAYOUTS = {"fp8_ds_mla": ("mla_decode_fp8_ds_mla_causal_dense_fold0_m16_hopper_narrow", 656, 528, 64, True),
           "fp8": ("mla_decode_fp8_causal_dense_fold0_m16_hopper_narrow", 576, 512, 64, False),
           "fp8_sparse": ("mla_decode_fp8_null_sparse_fold0_m16_hopper_narrow", 576, 512, 64, False),
           "fp8_qk512": ("mla_decode_fp8_causal_dense_fold0_qk512_m16_hopper_narrow", 512, 512, 0, False)}

E4M3 = np.arange(256, dtype=np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float64)


def layout(name):
    """(raw_key, row_bytes, rope_at, d_rope, bf16_rope), raw_key(n) as the kernel computes it:
    where key n's first piece lies."""
    variant, row_bytes, rope_at, d_rope, bf16_rope = LAYOUTS[name]
    key = parse(variant)
    assert narrow_rs(key) and key.row_bytes == row_bytes
    if narrow_tma_raw(key):
        return (lambda n: n * tensor_map.RAW_BOX_BYTES), row_bytes, rope_at, d_rope, bf16_rope
    return (lambda n: raw_key_offset(key, n)), row_bytes, rope_at, d_rope, bf16_rope


# The kernel's ldmatrix addresses (mla_decode_narrow.cu.j2: s_lane, s_addr, o_lane, o_addr),
# written here as it computes them (TMA_RAW: the swizzle's XOR split between the lane's base
# and each load); records() places the pieces by render.raw_piece_offset instead.
def tma(name):
    return narrow_tma_raw(parse(LAYOUTS[name][0]))


COLS = tensor_map.RAW_BOX_BYTES // 16
BOX_TILE = KEYS * tensor_map.RAW_BOX_BYTES


def s_addr(name, w, t, p):
    """Warp w, lane t's address of S^T's x4 starting at piece p (even; lanes 16-31 read p + 1)."""
    at = layout(name)[0]
    n = 16 * w + 8 * ((t >> 3) & 1) + (t & 7)
    if tma(name):
        s_lane = at(n) + (((t >> 4) ^ (n % 8)) << 4)
        return (s_lane ^ ((p % COLS) << 4)) + p // COLS * BOX_TILE
    return at(n) + 16 * (t >> 4) + 16 * p


def o_addr(name, w, t, c):
    """Warp w, lane t's address of O^T's chunk c (key t; x4 h adds raw_key(32))."""
    at = layout(name)[0]
    if tma(name):
        o_lane = at(t) + ((w ^ (t % 8)) << 4)
        return (o_lane ^ (((4 * c) % COLS) << 4)) + 4 * c // COLS * BOX_TILE
    return at(t) + 16 * w + 64 * c


def tile_bytes(name):
    return raw_tile_bytes(parse(LAYOUTS[name][0]))


def random_e4m3(rng, shape):
    b = rng.integers(0, 256, size=shape, dtype=np.uint8)
    b[(b & 0x7F) == 0x7F] = 0x10   # no NaN codes
    return b


def records(rng, name):
    """A tile of 64 records where the kernel puts them (raw_key_offset): finite e4m3 latent
    bytes, the rope (bf16 or e4m3); returns the tile's bytes, the decoded latent columns and
    the rope."""
    at, row_bytes, rope_at, d_rope, bf16_rope = layout(name)
    rec = np.zeros((KEYS, row_bytes), np.uint8)
    lat = random_e4m3(rng, (KEYS, D_LATENT))
    rec[:, :D_LATENT] = lat
    if bf16_rope:
        rope = rng.standard_normal((KEYS, d_rope)).astype(ml_dtypes.bfloat16)
        rec[:, rope_at:rope_at + 2 * d_rope] = rope.view(np.uint8).reshape(KEYS, 2 * d_rope)
        rope = rope.astype(np.float64)
    else:
        rb = random_e4m3(rng, (KEYS, d_rope))
        rec[:, rope_at:rope_at + d_rope] = rb
        rope = E4M3[rb]
    raw = np.full(tile_bytes(name), 0xFF, np.uint8)   # the padding: never read
    key = parse(LAYOUTS[name][0])
    for n in range(KEYS):
        for p in range(row_bytes // 16):
            off = raw_piece_offset(key, n, p)
            assert (raw[off:off + 16] == 0xFF).all(), "records overlap"
            raw[off:off + 16] = rec[n, 16 * p:16 * p + 16]
    return raw, E4M3[lat], rope


def ldsm_x4(mem, lane_addr, trans):
    """ldmatrix .m8n8.x4.b16 (PTX ISA): lane 8 i + r gives the address of matrix i's row r
    (16 bytes, 8 b16 values); register i of lane t holds matrix i's (row t / 4, columns
    2 (t % 4), + 1), or with .trans (rows 2 (t % 4), + 1 of column t / 4), low half first.
    Returns [lane][register] as 4 bytes each."""
    out = np.zeros((32, 4, 4), np.uint8)
    for i in range(4):
        rows = [mem[lane_addr[8 * i + r]:lane_addr[8 * i + r] + 16] for r in range(8)]
        for t in range(32):
            g, q = t // 4, t % 4
            if trans:   # b16 element (row, col) = bytes 2 col, 2 col + 1 of that row
                out[t, i] = np.concatenate([rows[2 * q][2 * g:2 * g + 2], rows[2 * q + 1][2 * g:2 * g + 2]])
            else:
                out[t, i] = rows[g][4 * q:4 * q + 4]
    return out


def prmt_3120(b):
    """__byte_perm(x, 0, 0x3120): bytes 0, 2, 1, 3 of x."""
    return b[[0, 2, 1, 3]]


def a_matrix(frags):
    """The 64 x 16 A operand an RS wgmma sees from [warp][lane][4 registers][2 values]
    (PTX ISA's m64k16 fragment: a0 = (row g, k 2q, 2q+1), a1 = (row g + 8, same k),
    a2 = (row g, k 2q + 8, + 9), a3 = (row g + 8, k 2q + 8, + 9); warp w: rows 16 w ..)."""
    a = np.zeros((64, 16))
    for w in range(4):
        for t in range(32):
            g, q = t // 4, t % 4
            for j, (dr, dk) in enumerate(((0, 0), (8, 0), (0, 8), (8, 8))):
                a[16 * w + g + dr, 2 * q + dk:2 * q + dk + 2] = frags[w][t][j]
    return a


def e4m3_pair(two_bytes):
    return [E4M3[two_bytes[0]], E4M3[two_bytes[1]]]


def q_permuted(q):
    """load_q_rs: each 16-column block's 32-bit words (column pairs) stored even words first,
    then odd ones: K position L of the block holds the column this returns."""
    cols = np.zeros(q.shape[1], int)
    for blk in range(q.shape[1] // 16):
        words = [0, 2, 4, 6, 1, 3, 5, 7]
        for w_out, w_in in enumerate(words):
            cols[16 * blk + 2 * w_out] = 16 * blk + 2 * w_in
            cols[16 * blk + 2 * w_out + 1] = 16 * blk + 2 * w_in + 1
    return q[:, cols]


@pytest.mark.parametrize("name", LAYOUTS)
def test_s_fragments_give_k_q_transposed(name):
    """S^T's e4m3 steps (latent_frags: s_lane, two x4 a 64-column chunk, register halves to
    the K pairs; fp8's rope among them) against Q stored in load_q_rs' order, and
    fp8_ds_mla's bf16 rope (rope_frags: an x4 a k-step, as loaded) against Q's rope as it
    is: K Q^T of the decoded records."""
    at, _, rope_at, d_rope, bf16_rope = layout(name)
    rng = np.random.default_rng(1)
    raw, lat, rope = records(rng, name)
    mem = raw
    q = rng.standard_normal((ROWS, D_LATENT + d_rope))
    e4m3_cols = D_LATENT if bf16_rope else D_LATENT + d_rope
    k_e4m3 = lat if bf16_rope else np.concatenate([lat, rope], axis=1)
    q_smem = q_permuted(q[:, :e4m3_cols])
    s_lat = np.zeros((KEYS, ROWS))
    s_rope = np.zeros((KEYS, ROWS))
    for c in range(e4m3_cols // 64):
        steps = [[[None] * 32 for _ in range(4)] for _ in range(4)]   # [k-step][warp][lane]
        for w in range(4):
            for h in range(2):
                regs = ldsm_x4(mem, [s_addr(name, w, t, 4 * c + 2 * h) for t in range(32)], trans=False)
                for k in range(2):
                    for t in range(32):
                        x, y = regs[t, 2 * k], regs[t, 2 * k + 1]
                        steps[2 * h + k][w][t] = [e4m3_pair(x[:2]), e4m3_pair(y[:2]),
                                                  e4m3_pair(x[2:]), e4m3_pair(y[2:])]
        for ks in range(4):
            a = a_matrix(steps[ks])
            s_lat += a @ q_smem[:, 64 * c + 16 * ks:64 * c + 16 * ks + 16].T
    for ks in range(4 if bf16_rope else 0):
        frags = [[None] * 32 for _ in range(4)]
        for w in range(4):
            s_lane = [at(16 * w + 8 * ((t >> 3) & 1) + (t & 7)) + 16 * (t >> 4) for t in range(32)]
            regs = ldsm_x4(mem, [a + rope_at + 32 * ks for a in s_lane], trans=False)
            for t in range(32):
                vals = regs[t].reshape(-1).view(np.uint16).view(ml_dtypes.bfloat16).astype(np.float64)
                frags[w][t] = [list(vals[2 * j:2 * j + 2]) for j in range(4)]
        s_rope += a_matrix(frags) @ q[:, D_LATENT + 16 * ks:D_LATENT + 16 * ks + 16].T
    np.testing.assert_allclose(s_lat, k_e4m3 @ q[:, :e4m3_cols].T, rtol=1e-12, atol=1e-9)
    if bf16_rope:
        np.testing.assert_allclose(s_rope, rope @ q[:, D_LATENT:].T, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("name", LAYOUTS)
def test_v_fragments_and_epilogue_columns_give_p_v(name):
    """O^T's steps (v_frags: o_lane, two transposed x4 a chunk, PRMT 0x3120, each register
    half one key pair of one column) against P^T in the keys' order, then the epilogue's
    column of each accumulator (64 c + 16 w + 2 g + hb for O^T row 16 w + g + 8 hb): P V."""
    at = layout(name)[0]
    rng = np.random.default_rng(2)
    raw, lat, _ = records(rng, name)
    mem = raw
    p = rng.standard_normal((ROWS, KEYS))
    out = np.full((ROWS, D_LATENT), np.nan)
    for c in range(D_LATENT // 64):
        ot = np.zeros((64, ROWS))   # O^T's logical rows of the chunk
        steps = [[[None] * 32 for _ in range(4)] for _ in range(4)]
        for w in range(4):
            for h in range(2):
                regs = ldsm_x4(mem, [o_addr(name, w, t, c) + h * at(32) for t in range(32)], trans=True)
                for k in range(2):
                    for t in range(32):
                        lo, hi = prmt_3120(regs[t, 2 * k]), prmt_3120(regs[t, 2 * k + 1])
                        steps[2 * h + k][w][t] = [e4m3_pair(lo[:2]), e4m3_pair(lo[2:]),
                                                  e4m3_pair(hi[:2]), e4m3_pair(hi[2:])]
        for ks in range(4):
            ot += a_matrix(steps[ks]) @ p[:, 16 * ks:16 * ks + 16].T
        # the epilogue: accumulator i of warp w, lane t holds O^T row 16 w + g + 8 ((i >> 1) & 1)
        for w in range(4):
            for t in range(32):
                g = t // 4
                for hb in range(2):
                    out[:, 64 * c + 16 * w + 2 * g + hb] = ot[16 * w + g + 8 * hb]
    np.testing.assert_allclose(out, p @ lat, rtol=1e-12, atol=1e-9)


@pytest.mark.parametrize("name", LAYOUTS)
def test_ldmatrix_rows_of_the_raw_tiles_are_conflict_free(name):
    """A matrix's 8 row addresses (8 consecutive keys, one 16-byte column) fall in 8
    distinct 16-byte bank columns where the kernel puts the records (fp8_ds_mla's 656 =
    5 x 128 + 16 back to back; fp8's 576 in pairs, each pair padded by 16 bytes; 512 one a
    group), which the records back to back would not give fp8; and each group of keys
    copied as one lies back to back (key 32 a group's first: o_lane's second x4)."""
    at, row_bytes = layout(name)[:2]
    key = parse(LAYOUTS[name][0])
    for key0 in range(0, KEYS, 8):
        for p in range(row_bytes // 16):
            assert len({raw_piece_offset(key, key0 + r, p) // 16 % 8 for r in range(8)}) == 8
    assert name == "fp8_ds_mla" or len({r * row_bytes // 16 % 8 for r in range(8)}) < 8
    for n in range(32):
        assert at(n + 32) == at(n) + at(32)
    assert tile_bytes(name) >= max(raw_piece_offset(key, n, p) + 16 for n in range(KEYS) for p in range(row_bytes // 16))
    # the largest groups that spread: fp8's pairs halve its copies a sparse tile (64 -> 32);
    # dense fp8 rows by TMA column boxes, unpadded (render.narrow_tma_raw)
    assert raw_group(key) == {"fp8_ds_mla": 64, "fp8": 64, "fp8_sparse": 2, "fp8_qk512": 1}[name]
    assert tma(name) == (name == "fp8")
