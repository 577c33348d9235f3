"""Tests of mla_cupy.reference: against a brute-force loop and against identities.

The brute force shares nothing with the reference: the test encodes known values
into cache bytes itself, enumerates visible keys one by one with the rules of docs/spec.md
and does the softmax per head and key with `math`. Every Case also
poisons all rows, scales and table entries no visible key refers to, so reading
any of them shows up as NaN or IndexError.
"""

import math
import time
from types import SimpleNamespace

import ml_dtypes
import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from mla_cupy.reference import dequantize_rows, merge_by_lse, mla_decode_reference

E4M3 = ml_dtypes.float8_e4m3fn
BF16 = ml_dtypes.bfloat16
LAYOUTS = ["bf16", "fp16", "fp8", "fp8_rope_aware", "fp8_ds_mla"]
LAYERS = 2
SENTINEL = 2**31 - 1
TOL = {"rtol": 1e-9, "atol": 1e-10}  # float64 against float64: only summation order differs

FEW = settings(deadline=None, max_examples=25)
MANY = settings(deadline=None, max_examples=80)


# --- encoding known values into cache bytes ------------------------------------------


def bf16_bytes(r):
    """bf16 values [..., m] -> little-endian bytes [..., 2m]."""
    return r.view(np.uint16).astype("<u2").view(np.uint8)


def encode_rows(rng, layout, shape, d_qk=576, sigma=None, v_ones=False):
    """Random rows of `layout` with leading axes `shape`.

    Returns (stored, K, V, sigma): what goes into the cache, the exact float64
    values it encodes, and the per-row scale of fp8_rope_aware. v_ones makes
    every V row all ones (and the scales 1).
    """
    latent = np.ones(shape + (512,)) if v_ones else rng.normal(0, 2, shape + (512,))
    rope = rng.normal(size=shape + (d_qk - 512,))
    if layout in ("bf16", "fp16", "fp8"):
        x = np.concatenate([latent, rope], -1).astype({"bf16": BF16, "fp16": np.float16, "fp8": E4M3}[layout])
        k = x.astype(np.float64)
        return (x.view(np.uint8) if layout == "fp8" else x), k, k[..., :512], None
    c, r = latent.astype(E4M3), rope.astype(BF16)
    c64, r64 = c.astype(np.float64), r.astype(np.float64)
    if layout == "fp8_rope_aware":
        if sigma is None:
            sigma = np.ones(shape) if v_ones else rng.uniform(0.25, 2.0, shape)
        sigma = np.asarray(sigma, dtype=np.float32)
        s = sigma.astype(np.float64)[..., None]
        v = s * c64
        return np.concatenate([c.view(np.uint8), bf16_bytes(r)], -1), np.concatenate([v, s * r64], -1), v, sigma
    block_scales = np.ones(shape + (4,)) if v_ones else rng.uniform(0.5, 2.0, shape + (4,))
    block_scales = block_scales.astype(np.float32)
    stored = np.concatenate([c.view(np.uint8), block_scales.astype("<f4").view(np.uint8), bf16_bytes(r)], -1)
    v = c64 * np.repeat(block_scales.astype(np.float64), 128, -1)
    return stored, np.concatenate([v, r64], -1), v, None


def junk_indices(rng, shape, num_rows):
    """Encoded row indices with invalid entries and duplicates mixed in."""
    idx = rng.integers(0, num_rows, shape)
    bad = rng.random(shape) < 0.2
    idx[bad] = rng.choice([-1, num_rows, num_rows + 7, 2**31 - 1, -(2**31)], bad.sum())
    dup = rng.random(shape) < 0.15
    dup[:, 0] = False
    idx[dup] = np.roll(idx, 1, axis=1)[dup]
    return idx.astype(np.int32)


def collection(blocks, table, cache_lengths, page_size, scales, layout):
    return SimpleNamespace(
        blocks=blocks,
        lookup_table=table,
        cache_lengths=cache_lengths,
        page_size=page_size,
        scales=scales,
        layout=layout,
    )


def keep_mask(blocks, rows, layer):
    """[num_blocks, layers, page_size] True exactly at the encoded `rows` of `layer`."""
    keep = np.zeros(blocks.shape[:3], bool)
    rows = np.array(sorted(rows), dtype=np.int64)
    keep[rows // blocks.shape[2], layer, rows % blocks.shape[2]] = True
    return keep


def poison(arr, keep):
    """Copy of `arr` with NaN (0xFF bytes: NaN as e4m3, bf16 and fp32) wherever not `keep`."""
    if arr is None:
        return None
    out = arr.copy()
    out[~keep] = 0xFF if out.dtype == np.uint8 else np.nan
    return out


# --- random problems ------------------------------------------------------------------


@st.composite
def problems(draw, max_seqs=3, max_new=3, max_cached=6, max_heads=3, one_token=False, **fixed):
    """Parameters of a Case; keyword arguments pin any of them."""

    def pick(name, strategy):
        return fixed[name] if name in fixed else draw(strategy)

    layout = pick("layout", st.sampled_from(LAYOUTS))
    sparse = pick("sparse", st.booleans())
    batch = draw(st.integers(1, max_seqs))
    new_range = (1, 1) if one_token else (0, max_new)
    return dict(
        layout=layout,
        sparse=sparse,
        mask=pick("mask", st.sampled_from(["null", "causal"] + ([] if sparse else ["sliding_window_causal"]))),
        new=draw(st.lists(st.integers(*new_range), min_size=batch, max_size=batch)),
        cached=draw(st.lists(st.integers(0, max_cached), min_size=batch, max_size=batch)),
        page_size=pick("page_size", st.integers(1, 4)),
        heads=pick("heads", st.integers(1, max_heads)),
        d_qk=pick("d_qk", st.sampled_from([576, 512]) if layout in ("bf16", "fp16", "fp8") else st.just(576)),
        window=pick("window", st.integers(1, 5)),
        sink=pick("sink", st.sampled_from([None, "finite", "-inf", "+inf", "mixed"])),
        q_kind=pick("q_kind", st.sampled_from(["bf16", "e4m3"])),
        q_scale=pick("q_scale", st.booleans()),
        layer=pick("layer", st.integers(0, LAYERS - 1)),
        spare_blocks=pick("spare_blocks", st.integers(0, 2)),
        table_dtype=pick("table_dtype", st.sampled_from([np.int32, np.uint32])),
        stride=pick("stride", st.integers(1, 8)),
        topk=pick("topk", st.booleans()),
        logical=pick("logical", st.booleans()),
        fold=pick("fold", st.booleans()),
        extra=pick("extra", st.booleans()),
        extra_stride=pick("extra_stride", st.integers(1, 4)),
        extra_topk=pick("extra_topk", st.booleans()),
        extra_scales_ptr=pick("extra_scales_ptr", st.booleans()),
        v_ones=pick("v_ones", st.just(False)),
        seed=draw(st.integers(0, 2**32 - 1)),
    )


# One small problem; fixed_case() changes some of its parameters.
BASE = {
    "layout": "bf16", "sparse": False, "mask": "causal", "new": [1, 2], "cached": [2, 0], "page_size": 2, "heads": 2,
    "d_qk": 576, "window": 1, "sink": None, "q_kind": "bf16", "q_scale": False, "layer": 0, "spare_blocks": 0,
    "table_dtype": np.int32, "stride": 1, "topk": False, "logical": False, "fold": False, "extra": False,
    "extra_stride": 1, "extra_topk": False, "extra_scales_ptr": False, "v_ones": False, "seed": 0,
}  # fmt: skip


def fixed_case(**changes):
    return Case({**BASE, **changes})


class Case:
    """A random problem, the exact values its bytes encode and its visible key sets.

    `run()` calls the reference on the poisoned cache (every row, scale and table
    entry no visible key uses replaced by NaN or a sentinel), `run(poisoned=False)`
    on the clean one; keyword arguments override the reference's keywords.
    """

    def __init__(self, p):
        rng = np.random.default_rng(p["seed"])
        self.p = p
        layout, ps, heads, d_qk, layer = p["layout"], p["page_size"], p["heads"], p["d_qk"], p["layer"]
        new, cached = np.array(p["new"]), np.array(p["cached"])
        self.offsets = np.concatenate([[0], np.cumsum(new)]).astype(np.int32)
        tokens = int(self.offsets[-1])
        n_keys = cached + new
        pages = -(-n_keys // ps)
        num_blocks = max(1, int(pages.sum()) + p["spare_blocks"])
        table = np.full((len(new), int(pages.max()) + 1), SENTINEL, dtype=np.int64)
        physical = iter(rng.permutation(num_blocks))
        for b, n in enumerate(pages):
            table[b, :n] = [next(physical) for _ in range(n)]
        blocks, k, v, sigma = encode_rows(rng, layout, (num_blocks, LAYERS, ps), d_qk, v_ones=p["v_ones"])
        cache_lengths = cached.astype(p["table_dtype"])
        self.main = collection(blocks, table.astype(p["table_dtype"]), cache_lengths, ps, sigma, layout)
        self.rows = {"m": (k[:, layer].reshape(-1, d_qk), v[:, layer].reshape(-1, 512))}

        q_scale = rng.uniform(0.25, 2.0, tokens).astype(np.float32) if p["q_scale"] else None
        if layout == "fp8_rope_aware":
            sig = np.ones(tokens) if q_scale is None else q_scale
            q, self.q_true, _, _ = encode_rows(rng, layout, (tokens, heads), sigma=np.repeat(sig[:, None], heads, 1))
        elif layout == "fp8" and p["q_kind"] == "e4m3":
            q, self.q_true, _, _ = encode_rows(rng, "fp8", (tokens, heads), d_qk)
            if q_scale is not None:
                self.q_true = self.q_true * q_scale.astype(np.float64)[:, None, None]
        else:
            q, self.q_true, _, _ = encode_rows(
                rng, layout if layout in ("bf16", "fp16") else "bf16", (tokens, heads), d_qk
            )
            q_scale = None
        self.scale = float(rng.uniform(0.02, 0.15))
        finite = rng.normal(0, 3, heads)
        self.sink = {
            None: None,
            "finite": finite,
            "-inf": np.full(heads, -np.inf),
            "+inf": np.full(heads, np.inf),
            "mixed": rng.choice([-np.inf, np.inf, 0.0], heads) + finite,
        }[p["sink"]]
        if self.sink is not None:
            self.sink = self.sink.astype(np.float32)

        kw = dict(
            mask_str=p["mask"],
            per_token_scale_rope_aware=layout == "fp8_rope_aware",
            q_scale_ptr=q_scale,
            attn_sink_ptr=self.sink,
        )
        if p["mask"] == "sliding_window_causal":
            kw["local_window_size"] = p["window"]
        extra = None
        if p["sparse"]:
            stride = p["stride"]
            kw.update(
                sparse_mla=True, d_indices=junk_indices(rng, (tokens, stride), num_blocks * ps), indices_stride=stride
            )
            kw["fold_shared_index"] = p["fold"]
            if p["topk"]:
                kw["topk_lengths"] = rng.integers(-1, stride + 2, len(new)).astype(np.int32)
            if p["logical"]:
                kw["logical_indices"] = rng.integers(-1, n_keys.max() + 2, (tokens, stride)).astype(np.int32)
            if p["extra"]:
                e_ps, e_blocks = int(rng.integers(1, 5)), int(rng.integers(1, 4))
                e_stored, ek, ev, e_sigma = encode_rows(rng, layout, (e_blocks, LAYERS, e_ps), d_qk, v_ones=p["v_ones"])
                extra = collection(
                    e_stored, np.full((1, 1), SENTINEL, np.int32), np.zeros(1, np.int32), e_ps, e_sigma, layout
                )
                self.rows["e"] = (ek[:, layer].reshape(-1, d_qk), ev[:, layer].reshape(-1, 512))
                e_stride = p["extra_stride"]
                kw.update(extra_k=extra, extra_indices_stride=e_stride)
                kw["extra_d_indices"] = junk_indices(rng, (tokens, e_stride), e_blocks * e_ps)
                if p["extra_topk"]:
                    kw["extra_topk_lengths"] = rng.integers(-1, e_stride + 2, len(new)).astype(np.int32)
                if layout == "fp8_rope_aware" and p["extra_scales_ptr"]:
                    kw["extra_scales_ptr"], extra.scales = extra.scales, None
        self.args = (q, self.offsets, self.main, layer, self.scale)
        self.kw = kw
        self.visible, used_pages = self._visible()

        # The poisoned twin: only what a visible key refers to survives.
        keep = keep_mask(blocks, [r for keys in self.visible for s, r in keys if s == "m"], layer)
        bad_entries = [SENTINEL, -1, num_blocks, int(rng.integers(num_blocks))]
        bad_table = table.copy()
        for (b, page), _ in np.ndenumerate(table):
            if (b, page) not in used_pages:
                bad_table[b, page] = bad_entries[(b + page) % len(bad_entries)]
        bad_main = collection(
            poison(blocks, keep), bad_table.astype(p["table_dtype"]), cache_lengths, ps, poison(sigma, keep), layout
        )
        self.bad_args = (q, self.offsets, bad_main, layer, self.scale)
        self.bad_kw = dict(kw)
        if extra is not None:
            e_keep = keep_mask(extra.blocks, [r for keys in self.visible for s, r in keys if s == "e"], layer)
            self.bad_kw["extra_k"] = collection(
                poison(extra.blocks, e_keep),
                extra.lookup_table,
                extra.cache_lengths,
                extra.page_size,
                poison(extra.scales, e_keep),
                layout,
            )
            if "extra_scales_ptr" in kw:
                self.bad_kw["extra_scales_ptr"] = poison(kw["extra_scales_ptr"], e_keep)

    def run(self, poisoned=True, **overrides):
        args, kw = (self.bad_args, self.bad_kw) if poisoned else (self.args, self.kw)
        return mla_decode_reference(*args, **{**kw, **overrides})

    def _visible(self):
        """Per token, the visible (stream, encoded row) pairs; and the (seq, page) pairs dense keys use."""
        p, kw = self.p, self.kw
        table, ps = self.main.lookup_table.astype(np.int64).tolist(), p["page_size"]
        offsets = self.offsets.tolist()
        visible, pages = [], set()
        for b, (n_new, n_cached) in enumerate(zip(p["new"], p["cached"], strict=True)):
            n_keys = n_new + n_cached
            for i in range(n_new):
                t, pos, keys = offsets[b] + i, n_cached + i, []
                if not p["sparse"]:
                    for j in range(n_keys):
                        if (
                            p["mask"] == "null"
                            or (p["mask"] == "causal" and j <= pos)
                            or (p["mask"] == "sliding_window_causal" and pos - p["window"] < j <= pos)
                        ):
                            keys.append(("m", table[b][j // ps] * ps + j % ps))
                            pages.add((b, j // ps))
                else:
                    r = offsets[b] if p["fold"] else t
                    rows, n_rows = kw["d_indices"].tolist(), self.rows["m"][0].shape[0]
                    used = kw["topk_lengths"][b] if "topk_lengths" in kw else p["stride"]
                    for s in range(max(0, min(used, p["stride"], n_keys))):
                        if not 0 <= rows[r][s] < n_rows:
                            continue
                        if p["mask"] == "causal":
                            logical = kw.get("logical_indices")
                            if not (s <= pos if logical is None else 0 <= logical[r][s] <= pos):
                                continue
                        keys.append(("m", rows[r][s]))
                    if "extra_k" in kw:
                        rows, n_rows = kw["extra_d_indices"].tolist(), self.rows["e"][0].shape[0]
                        used = kw["extra_topk_lengths"][b] if "extra_topk_lengths" in kw else p["extra_stride"]
                        for e in range(max(0, min(used, p["extra_stride"]))):
                            if 0 <= rows[t][e] < n_rows:
                                keys.append(("e", rows[t][e]))
                visible.append(keys)
        return visible, pages

    def brute_force(self):
        """Per token, head and key with math.exp and the max trick over keys and sink."""
        heads = self.p["heads"]
        out = np.zeros((len(self.visible), heads, 512))
        lse = np.full((len(self.visible), heads), -np.inf)
        for t, keys in enumerate(self.visible):
            kv = [(self.rows[s][0][r].tolist(), self.rows[s][1][r].tolist()) for s, r in keys]
            for h in range(heads):
                if not kv:
                    continue
                q = self.q_true[t, h].tolist()
                scores = [self.scale * math.fsum(a * b for a, b in zip(q, k, strict=True)) for k, _ in kv]
                top = max(scores)
                lse[t, h] = top + math.log(math.fsum(math.exp(s - top) for s in scores))
                sink = -math.inf if self.sink is None else float(self.sink[h])
                if sink == math.inf:
                    continue
                top = max(top, sink)
                weights = [math.exp(s - top) for s in scores]
                denominator = math.fsum(weights) + (math.exp(sink - top) if sink > -math.inf else 0.0)
                for d in range(512):
                    out[t, h, d] = math.fsum(w * v[d] for w, (_, v) in zip(weights, kv, strict=True)) / denominator
        return out, lse


# --- against the brute force ----------------------------------------------------------


@MANY
@given(problems())
def test_matches_brute_force(p):
    case = Case(p)
    out, lse = case.run()
    want_out, want_lse = case.brute_force()
    np.testing.assert_allclose(lse, want_lse, **TOL)
    np.testing.assert_allclose(out, want_out, **TOL)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("sparse", [False, True])
@FEW
@given(data=st.data())
def test_matches_brute_force_per_layout(layout, sparse, data):
    case = Case(data.draw(problems(layout=layout, sparse=sparse, sink="finite", extra=sparse)))
    out, lse = case.run()
    want_out, want_lse = case.brute_force()
    np.testing.assert_allclose(lse, want_lse, **TOL)
    np.testing.assert_allclose(out, want_out, **TOL)


def test_empty_sequences_and_empty_caches():
    case = fixed_case(new=[0, 2, 1, 0], cached=[3, 0, 0, 5], layer=1, spare_blocks=1, seed=7)
    out, lse = case.run()
    assert out.shape == (3, 2, 512)
    want_out, want_lse = case.brute_force()
    np.testing.assert_allclose(lse, want_lse, **TOL)
    np.testing.assert_allclose(out, want_out, **TOL)


# --- identities -----------------------------------------------------------------------


@MANY
@given(problems(max_seqs=4, max_new=4, max_cached=40, max_heads=8))
def test_unread_rows_and_table_entries_do_not_matter(p):
    case = Case(p)
    clean, poisoned = case.run(poisoned=False), case.run()
    np.testing.assert_array_equal(clean[0], poisoned[0])
    np.testing.assert_array_equal(clean[1], poisoned[1])


@MANY
@given(problems(max_cached=20, max_heads=8, v_ones=True))
def test_softmax_weights_sum_to_one(p):
    case = Case(p)
    out, lse = case.run()
    empty = np.array([not keys for keys in case.visible], dtype=bool)
    with np.errstate(over="ignore", invalid="ignore"):
        mass = np.ones_like(lse) if case.sink is None else 1.0 / (1.0 + np.exp(case.sink.astype(np.float64) - lse))
    mass[empty] = 0.0
    np.testing.assert_allclose(out, np.broadcast_to(mass[..., None], out.shape), rtol=1e-12, atol=1e-12)
    assert np.all(np.isneginf(lse[empty])) and np.all(np.isfinite(lse[~empty]))


@MANY
@given(problems(max_cached=30, max_heads=8))
def test_output_inside_hull_of_visible_values(p):
    case = Case(p)
    out, _ = case.run()
    for t, keys in enumerate(case.visible):
        if not keys:
            assert not out[t].any()
            continue
        v = np.stack([case.rows[s][1][r] for s, r in keys])
        if case.sink is not None:  # the sink scales the convex combination towards 0
            v = np.concatenate([v, np.zeros((1, 512))])
        slack = 1e-12 * np.abs(v).max()
        assert np.all(out[t] >= v.min(0) - slack) and np.all(out[t] <= v.max(0) + slack)


def index_lists(case, split_rng):
    """Each token's visible rows as two index lists of a random split, padded with -1."""
    lists = [[r for _, r in keys] for keys in case.visible]
    width = max([len(rows) for rows in lists] + [1])
    first, second = np.full((len(lists), width), -1, np.int32), np.full((len(lists), width), -1, np.int32)
    for t, rows in enumerate(lists):
        cut = int(split_rng.integers(0, len(rows) + 1))
        first[t, :cut], second[t, cut : len(rows)] = rows[:cut], rows[cut:]
    return first, second


@MANY
@given(problems(sparse=False, max_cached=30, max_heads=4), st.integers(0, 2**32 - 1))
def test_split_keys_merge_to_the_whole(p, seed):
    case = Case(p)
    whole_out, whole_lse = case.run()
    first, second = index_lists(case, np.random.default_rng(seed))
    halves = [case.run(mask_str="null", sparse_mla=True, d_indices=d, attn_sink_ptr=None) for d in (first, second)]
    out, lse = merge_by_lse([h[0] for h in halves], [h[1] for h in halves], case.sink)
    np.testing.assert_allclose(lse, whole_lse, **TOL)
    np.testing.assert_allclose(out, whole_out, **TOL)

    # Same split as main + extra stream over the same cache: one softmax over the union.
    out, lse = case.run(
        mask_str="null", sparse_mla=True, d_indices=first, extra_k=case.bad_args[2], extra_d_indices=second
    )
    np.testing.assert_allclose(lse, whole_lse, **TOL)
    np.testing.assert_allclose(out, whole_out, **TOL)


@FEW
@given(problems(sink=None))
def test_sink_limits(p):
    case = Case(p)
    plain_out, plain_lse = case.run()
    heads = p["heads"]
    out, lse = case.run(attn_sink_ptr=np.full(heads, -np.inf, np.float32))
    np.testing.assert_array_equal(out, plain_out)
    np.testing.assert_array_equal(lse, plain_lse)
    out, lse = case.run(attn_sink_ptr=np.full(heads, np.inf, np.float32))
    assert not out.any()
    np.testing.assert_array_equal(lse, plain_lse)


@FEW
@given(problems(one_token=True, mask="causal", logical=False, max_cached=20))
def test_causal_equals_null_with_one_token_per_sequence(p):
    case = Case(p)
    causal, null = case.run(), case.run(mask_str="null")
    np.testing.assert_array_equal(causal[0], null[0])
    np.testing.assert_array_equal(causal[1], null[1])


@MANY
@given(problems(sparse=True, fold=True, max_new=4))
def test_fold_equals_the_copied_first_row(p):
    case = Case(p)
    first_rows = np.repeat(case.offsets[:-1], np.diff(case.offsets))
    copied = {k: case.kw[k][first_rows] for k in ("d_indices", "logical_indices") if k in case.kw}
    folded, unfolded = case.run(), case.run(fold_shared_index=False, **copied)
    np.testing.assert_array_equal(folded[0], unfolded[0])
    np.testing.assert_array_equal(folded[1], unfolded[1])


@FEW
@given(problems(sparse=True, extra=False))
def test_empty_visible_set(p):
    case = Case(p)
    tokens, heads = case.q_true.shape[:2]
    for overrides in (
        dict(d_indices=np.full((tokens, p["stride"]), -1, np.int32)),
        dict(topk_lengths=np.zeros(len(p["new"]), np.int32)),
        dict(mask_str="causal", logical_indices=np.full((tokens, p["stride"]), -1, np.int32)),
    ):
        out, lse = case.run(poisoned=False, **overrides)
        assert out.shape == (tokens, heads, 512) and not out.any()
        assert np.all(np.isneginf(lse))


@FEW
@given(problems(max_cached=20), st.integers(0, 2**32 - 1))
def test_permuted_block_tables(p, seed):
    case = Case(p)
    num_blocks, ps = case.main.blocks.shape[0], p["page_size"]
    perm = np.random.default_rng(seed).permutation(num_blocks)
    blocks, scales = np.empty_like(case.main.blocks), None
    blocks[perm] = case.main.blocks
    if case.main.scales is not None:
        scales = np.empty_like(case.main.scales)
        scales[perm] = case.main.scales
    table = case.main.lookup_table.astype(np.int64)
    table = np.where(table < num_blocks, perm[np.minimum(table, num_blocks - 1)], table)
    moved = collection(
        blocks, table.astype(case.main.lookup_table.dtype), case.main.cache_lengths, ps, scales, p["layout"]
    )
    overrides = {}
    if p["sparse"]:
        d = case.kw["d_indices"].astype(np.int64)
        valid = (d >= 0) & (d < num_blocks * ps)
        overrides["d_indices"] = np.where(valid, perm[np.where(valid, d, 0) // ps] * ps + d % ps, d).astype(np.int32)
    out, lse = mla_decode_reference(*case.args[:2], moved, *case.args[3:], **{**case.kw, **overrides})
    want_out, want_lse = case.run(poisoned=False)
    np.testing.assert_array_equal(out, want_out)
    np.testing.assert_array_equal(lse, want_lse)


def test_invalid_indices_are_masked():
    case = fixed_case(
        layout="fp8",
        sparse=True,
        mask="null",
        new=[2, 1],
        cached=[4, 6],
        sink="finite",
        q_kind="e4m3",
        q_scale=True,
        stride=6,
        seed=3,
    )
    rows = case.main.blocks.shape[0] * 2  # every sequence has N_b >= 6, so all 6 slots are used
    good = np.array([[0, 5, 3], [7, 7, 2], [1, 4, 6]], np.int32)
    junk = np.array(
        [[-1, 0, -(2**31), 5, rows, 3], [7, 2**31 - 1, 7, rows + 1, -5, 2], [-1, -1, -1, 1, 4, 6]], np.int32
    )
    with_junk = case.run(poisoned=False, d_indices=junk)
    compact = case.run(poisoned=False, d_indices=good, indices_stride=3)
    np.testing.assert_array_equal(with_junk[0], compact[0])
    np.testing.assert_array_equal(with_junk[1], compact[1])


def test_zero_tokens():
    case = fixed_case(new=[0, 0], cached=[3, 0], page_size=4, heads=5, table_dtype=np.uint32, seed=1)
    out, lse = case.run()
    assert out.shape == (0, 5, 512) and lse.shape == (0, 5)


def test_decode_step_at_scale_is_fast():
    rng = np.random.default_rng(0)
    batch, heads, n_keys, ps = 8, 128, 4096, 64
    num_blocks = batch * n_keys // ps
    coll = collection(
        rng.normal(size=(num_blocks, 1, ps, 576)).astype(BF16),
        rng.permutation(num_blocks).astype(np.int32).reshape(batch, -1),
        np.full(batch, n_keys - 1, np.int32),
        ps,
        None,
        "bf16",
    )
    q = rng.normal(size=(batch, heads, 576)).astype(BF16)
    start = time.perf_counter()
    out, lse = mla_decode_reference(q, np.arange(batch + 1), coll, 0, 576**-0.5)
    assert time.perf_counter() - start < 10  # typically ~0.2 s; the bound only catches a lost vectorisation
    assert out.shape == (batch, heads, 512) and np.isfinite(out).all() and np.isfinite(lse).all()


# --- helpers --------------------------------------------------------------------------


def test_merge_by_lse_skips_empty_partials():
    rng = np.random.default_rng(0)
    out, lse = rng.normal(size=(1, 3, 2, 512)), rng.normal(size=(1, 3, 2))
    merged = merge_by_lse(out, lse)
    np.testing.assert_array_equal(merged[0], out[0])
    np.testing.assert_array_equal(merged[1], lse[0])

    garbage = np.full_like(out, np.nan)
    merged = merge_by_lse(np.concatenate([out, garbage]), np.concatenate([lse, np.full_like(lse, -np.inf)]))
    np.testing.assert_allclose(merged[0], out[0], rtol=1e-15)
    np.testing.assert_allclose(merged[1], lse[0], rtol=1e-15)

    sink = np.array([np.inf, -np.inf])
    empty = merge_by_lse(garbage, np.full_like(lse, -np.inf), sink)
    assert not empty[0].any() and np.all(np.isneginf(empty[1]))


def test_merge_by_lse_two_partials_with_sink():
    a, b = np.full((1, 1, 4), 2.0), np.full((1, 1, 4), -1.0)
    la, lb = np.log([[3.0]]), np.log([[1.0]])
    out, lse = merge_by_lse([a, b], [la, lb], sink=np.array([0.0]))
    assert math.isclose(lse[0, 0], math.log(4.0))
    np.testing.assert_allclose(out, np.full((1, 1, 4), (3 * 2.0 + 1 * -1.0) / (4.0 + 1.0)))


def test_dequantize_known_bytes():
    one, two = 0x38, 0x40  # e4m3fn 1.0 and 2.0
    k, v = dequantize_rows(np.full((1, 576), two, np.uint8), "fp8")
    assert k.shape == (1, 576) and v.shape == (1, 512) and np.all(k == 2.0)

    rope = [0xC0, 0x3F] * 64  # bf16 1.5, little-endian
    k, v = dequantize_rows(np.array([[one] * 512 + rope], np.uint8), "fp8_rope_aware", scales=[4.0])
    np.testing.assert_array_equal(k, [[4.0] * 512 + [6.0] * 64])
    np.testing.assert_array_equal(v, [[4.0] * 512])

    scales = list(np.array([1, 2, 4, 0.5], "<f4").view(np.uint8))
    k, v = dequantize_rows(np.array([[one] * 512 + scales + rope], np.uint8), "fp8_ds_mla")
    np.testing.assert_array_equal(v[0], np.repeat([1.0, 2.0, 4.0, 0.5], 128))
    np.testing.assert_array_equal(k[0, 512:], [1.5] * 64)


def test_dequantize_to_bf16_rounds_the_scaled_latent_only():
    """The Hopper kernels' fp8_ds_mla values: e4m3 * scale formed in float32, rounded
    to bf16; exact for power-of-two scales, within 2^-8 relative (bf16 unit roundoff) otherwise; the rope
    (already bf16) and the other layouts untouched."""
    rng = np.random.default_rng(7)
    latent = rng.integers(0, 256, size=(4, 512)).astype(np.uint8)
    latent[(latent & 0x7F) == 0x7F] = 0x38          # no NaN codes
    rope = rng.standard_normal((4, 64)).astype(ml_dtypes.bfloat16).view(np.uint8)
    for scales, exact in (([0.5, 2.0, 0.125, 8.0], True), ([0.37, 1.9, 0.0123, 3.3], False)):
        rows = np.concatenate([latent, np.tile(np.array(scales, "<f4").view(np.uint8), (4, 1)), rope], axis=1)
        k, v = dequantize_rows(rows, "fp8_ds_mla")
        kr, vr = dequantize_rows(rows, "fp8_ds_mla", dequantize_to="bfloat16")
        want = (latent.view(ml_dtypes.float8_e4m3fn).astype(np.float32)
                * np.repeat(np.array(scales, np.float32), 128)).astype(ml_dtypes.bfloat16)
        np.testing.assert_array_equal(vr, want.astype(np.float64))
        np.testing.assert_array_equal(kr[:, 512:], k[:, 512:])
        assert np.all(np.abs(vr - v) <= (2.0**-8 + 2.0**-23) * np.abs(v))   # float32, then bf16
        assert np.array_equal(vr, v) == exact
    bf16_rows = rng.standard_normal((2, 576)).astype(ml_dtypes.bfloat16)
    assert np.array_equal(dequantize_rows(bf16_rows, "bf16", dequantize_to="bfloat16")[0],
                          dequantize_rows(bf16_rows, "bf16")[0])
    with pytest.raises(ValueError, match="dequantize_to"):
        dequantize_rows(rows, "fp8_ds_mla", dequantize_to="float16")


@pytest.mark.parametrize("layout", LAYOUTS)
def test_dequantize_inverts_the_test_encoder(layout):
    rng = np.random.default_rng(1)
    stored, k, v, sigma = encode_rows(rng, layout, (3, 5))
    got_k, got_v = dequantize_rows(stored, layout, sigma)
    np.testing.assert_array_equal(got_k, k.reshape(15, -1))
    np.testing.assert_array_equal(got_v, v.reshape(15, -1))


# --- argument errors ------------------------------------------------------------------


@pytest.mark.parametrize(
    "overrides, error",
    [
        (dict(mask_str="sliding_window_causal"), ValueError),
        (dict(mask_str="sliding_window_causal", local_window_size=0), ValueError),
        (dict(mask_str="banded"), ValueError),
        (dict(sparse_mla=True), ValueError),
        (
            dict(
                sparse_mla=True,
                mask_str="sliding_window_causal",
                local_window_size=2,
                d_indices=np.zeros((3, 1), np.int32),
            ),
            ValueError,
        ),
        (dict(sparse_mla=True, d_indices=np.zeros((3, 1), np.float32)), TypeError),
        (dict(per_token_scale_rope_aware=True), ValueError),
        (dict(extra_k=SimpleNamespace(layout="bf16")), ValueError),
    ],
)
def test_argument_errors(overrides, error):
    with pytest.raises(error):
        fixed_case().run(**overrides)


def test_layout_dtype_and_shape_errors():
    case = fixed_case()
    q, offsets, coll, layer, scale = case.args
    with pytest.raises(ValueError):
        mla_decode_reference(q, offsets, SimpleNamespace(**{**vars(coll), "layout": "int4"}), layer, scale)
    with pytest.raises(TypeError):
        mla_decode_reference(q.astype(np.float16), offsets, coll, layer, scale)
    with pytest.raises(TypeError):
        mla_decode_reference(
            q, offsets, SimpleNamespace(**{**vars(coll), "blocks": coll.blocks.astype(np.float32)}), layer, scale
        )
    with pytest.raises(ValueError):
        mla_decode_reference(q[:, :, :512], offsets, coll, layer, scale)
    with pytest.raises(ValueError):
        mla_decode_reference(q, offsets, coll, LAYERS, scale)
    rope_aware = fixed_case(layout="fp8_rope_aware")
    with pytest.raises(ValueError):
        rope_aware.run(poisoned=False, per_token_scale_rope_aware=False)
    q, offsets, coll, layer, scale = rope_aware.args
    with pytest.raises(ValueError):
        mla_decode_reference(
            q, offsets, SimpleNamespace(**{**vars(coll), "scales": None}), layer, scale, per_token_scale_rope_aware=True
        )


def test_key_offsets_shift_every_score_of_a_key():
    """``make_case(key_offsets=...)`` (the GPU tests' climbing scores): with one
    visible key, lse is that key's score, so it moves by the key's offset (up to the
    16-bit rounding of the stored column); the outputs (that key's V) do not move, and
    a case without rope columns is refused."""
    from mla_cupy.testing import make_case, reference
    plain = make_case(np.random.default_rng(7), seq_lens=[1, 1], cache_lens=[0, 0], num_heads=3)
    shifted = make_case(np.random.default_rng(7), seq_lens=[1, 1], cache_lens=[0, 0], num_heads=3,
                        key_offsets=lambda j: 40.0)
    (out0, lse0), (out1, lse1) = reference(plain), reference(shifted)
    np.testing.assert_array_equal(out1, out0)
    k_rope = plain.blocks[plain.lookup_table[:, 0], 0, 0, 512].astype(np.float64)     # the one key's, a token each
    moved = lse1 - lse0 + plain.scale * plain.q[..., 512].astype(np.float64) * k_rope[:, None]
    np.testing.assert_allclose(moved, 40.0, rtol=2.0 ** -7)
    with pytest.raises(ValueError, match="key_offsets"):
        make_case(np.random.default_rng(7), seq_lens=[1], cache_lens=[0], d_qk=512, key_offsets=lambda j: 1.0)


@pytest.mark.parametrize("group_scale, overflows", [(255.875, False), (4096.0, True)])
def test_two_level_case_puts_its_weights_at_the_slack(group_scale, overflows):
    """mla_cupy.testing.two_level_ds_mla_case, which the GPU test of the narrow kernel's
    scale bound (docs/spec.md section 4) relies on: every odd tile's scores sit
    TWO_LEVEL_STEP (log2 units) above the first tile's max, the even tiles' at it, so the
    running max never moves (slack 8) and the odd tiles' weights are 2^7.9; their
    product with the scale passes fp16's 65504 exactly when the scale is out of contract."""
    from mla_cupy.quantize import dequantize
    from mla_cupy.testing import TWO_LEVEL_STEP, TWO_LEVEL_TILE, two_level_ds_mla_case
    case = two_level_ds_mla_case(np.random.default_rng(0), group_scale)
    q = np.asarray(case.q, np.float64)
    for b in range(len(case.cache_lengths)):
        keys = int(case.cache_lengths[b]) + 1
        rows = np.stack([case.blocks[case.lookup_table[b, j // case.page_size], case.layer_idx,
                                     j % case.page_size] for j in range(keys)])
        k, _ = dequantize(rows, "fp8_ds_mla")
        t = int(case.input_row_offsets[b])
        assert (q[t] == q[t, :1]).all()   # every head alike
        scores = case.scale * np.log2(np.e) * (k @ q[t, 0])
        above = scores.reshape(-1, TWO_LEVEL_TILE).max(axis=1) - scores[:TWO_LEVEL_TILE].max()
        assert len(above) >= 8
        np.testing.assert_allclose(above[1::2], TWO_LEVEL_STEP, atol=1e-6)
        np.testing.assert_allclose(above[0::2], 0.0, atol=1e-6)
        assert (2.0 ** above.max() * group_scale > np.finfo(np.float16).max) == overflows
