"""Host-side planning (pure Python): ``choose_num_partitions``, ``tile_rows_for``
and the variant names of ``variants.py``."""
from __future__ import annotations

import dataclasses
import math

import mla_cupy.schedule as S

import pytest
from hypothesis import given
from hypothesis import strategies as st

from mla_cupy.schedule import (H200_RESIDENT_CTAS, H200_SMEM_PER_SM, H200_SMS, KEYS_PER_TILE,
                               MAX_PARTITIONS, RESERVED_SMEM_PER_CTA, choose_num_partitions,
                               ctas_per_sm, tile_rows_for)
from mla_cupy.variants import (TILE_ROWS,
                               CombineKey, DecodeKey, Layout, Mask, QuantizeKey, Sparsity,
                               all_variants,
                               parse)

A100_SMEM_PER_SM = 167936            # 164 KiB: one block may opt in to 163 KiB
A100_RESIDENT_CTAS = {64: 0, 32: 1, 16: 1}   # bf16 at d_qk=576 (checked below)

batch = st.integers(0, 4096)
heads = st.integers(0, 128)
q_len = st.integers(0, 16)
cache = st.one_of(st.integers(0, 4096), st.integers(0, 4_000_000))
sms = st.sampled_from([1, 2, 8, 66, 78, 108, 114, 132, 148])
# resident CTAs per tile of real devices (H200, A100 bf16 / fp8 qk512) and made-up ones
resident = st.one_of(st.sampled_from([H200_RESIDENT_CTAS, A100_RESIDENT_CTAS,
                                      {64: 1, 32: 1, 16: 1}]),
                     st.fixed_dictionaries({64: st.integers(0, 3), 32: st.integers(0, 3),
                                            16: st.integers(1, 4)}))


def _dense_row_tiles(num_heads, q_max_seq_len, resident_ctas=H200_RESIDENT_CTAS):
    """Row tiles of a dense sequence and their rows, with the dispatcher's
    fallback to a smaller tile where the chosen one does not fit."""
    rows = num_heads * q_max_seq_len
    tile = tile_rows_for(rows)
    while resident_ctas[tile] == 0:
        tile //= 2
    return math.ceil(rows / tile), tile


# ------------------------------------------------------------ occupancy

@pytest.mark.parametrize("layout", [x.value for x in Layout])
def test_h200_resident_ctas_follow_the_launch_config(layout):
    """The H200 default of choose_num_partitions is what the device query
    gives for every layout (without a GPU compiler.resident_ctas plans for an H200)."""
    from mla_cupy.compiler import resident_ctas
    assert resident_ctas(layout) == H200_RESIDENT_CTAS


def test_a100_holds_one_16_row_cta_per_sm():
    """The old rule of two 16-row CTAs per SM everywhere is wrong on an A100."""
    from mla_cupy.compiler import _resident_ctas
    assert _resident_ctas(Layout.BF16, 576, A100_SMEM_PER_SM) == A100_RESIDENT_CTAS
    # fp8 rows at d_qk=512 stage fewer bytes: the 64-row tile fits an A100
    assert _resident_ctas(Layout.FP8, 512, A100_SMEM_PER_SM) == {64: 1, 32: 1, 16: 1}


@pytest.mark.parametrize("smem_per_cta,smem_per_sm,expected", [
    (95232, H200_SMEM_PER_SM, 2), (192896, H200_SMEM_PER_SM, 1), (95232, A100_SMEM_PER_SM, 1),
    (192896, A100_SMEM_PER_SM, 0), (0, H200_SMEM_PER_SM, H200_SMEM_PER_SM // RESERVED_SMEM_PER_CTA),
    # the 1 KiB per CTA counts: two CTAs of exactly half the SM do not fit
    (H200_SMEM_PER_SM // 2, H200_SMEM_PER_SM, 1),
    (H200_SMEM_PER_SM // 2 - RESERVED_SMEM_PER_CTA, H200_SMEM_PER_SM, 2),
])
def test_ctas_per_sm(smem_per_cta, smem_per_sm, expected):
    assert ctas_per_sm(smem_per_cta, smem_per_sm) == expected


@pytest.mark.parametrize("name", ["smem_per_cta", "smem_per_sm"])
@pytest.mark.parametrize("bad", [-1, True, 2.0, None])
def test_ctas_per_sm_rejects_bad_arguments(name, bad):
    kw = dict(smem_per_cta=1000, smem_per_sm=H200_SMEM_PER_SM)
    kw[name] = bad
    with pytest.raises(ValueError, match=f"^{name}: expected an int >= 0, got"):
        ctas_per_sm(**kw)


@pytest.mark.parametrize("kw,h200,a100", [
    # 108 sequences x 16 heads fill an A100's 108 slots exactly, 108 of an H200's 264
    (dict(batch_size=108, num_heads=16, q_max_seq_len=1, max_cache_length=8192), 7, 1),
    (dict(batch_size=128, num_heads=16, q_max_seq_len=1, max_cache_length=4096), 2, 5),
])
def test_occupancy_changes_the_choice(kw, h200, a100):
    assert choose_num_partitions(**kw, sm_count=H200_SMS) == h200
    assert choose_num_partitions(**kw, sm_count=108, resident_ctas=A100_RESIDENT_CTAS) == a100


@given(st.integers(1, 64), st.integers(1, 8), cache, sms)
def test_twice_the_ctas_per_sm_is_twice_the_sms(b, h, c, sm):
    """Only slots = SMs x resident CTAs enter: doubling either gives one plan."""
    one = {64: 1, 32: 1, 16: 1}
    two = {rows: 2 for rows in TILE_ROWS}
    assert (choose_num_partitions(b, h, 1, c, sm_count=sm, resident_ctas=two)
            == choose_num_partitions(b, h, 1, c, sm_count=2 * sm, resident_ctas=one))


@pytest.mark.parametrize("bad", [{64: 1, 32: 1}, {64: 1, 32: 1, 16: -1}, {64: 1, 32: 1, 16: 1.0},
                                 {64: 1, 32: 1, 16: 1, 8: 1}, {64: 0, 32: 0, 16: 0}])
def test_bad_resident_ctas_raise(bad):
    with pytest.raises(ValueError, match="^resident_ctas: "):
        choose_num_partitions(2, 16, 1, 1000, resident_ctas=bad)


# ------------------------------------------------------------ choose_num_partitions

@given(batch, heads, q_len, cache, sms, resident)
def test_dense_partitions_in_range_and_never_more_than_key_tiles(b, h, q, c, sm, res):
    p = choose_num_partitions(b, h, q, c, sm_count=sm, resident_ctas=res)
    assert type(p) is int and 1 <= p <= MAX_PARTITIONS
    # no split without a 32-key tile of keys (keys = cached + new tokens)
    assert p <= max(1, math.ceil((c + q) / KEYS_PER_TILE))


@given(batch, heads, q_len, cache, sms, st.integers(0, 4096), st.integers(0, 1024),
       st.booleans())
def test_sparse_partitions_in_range_and_never_more_than_slot_tiles(b, h, q, c, sm, stride,
                                                                    extra, fold):
    p = choose_num_partitions(b, h, q, c, sparse_mla=True, indices_stride=stride,
                              extra_indices_stride=extra, fold_shared_index=fold, sm_count=sm)
    assert 1 <= p <= MAX_PARTITIONS
    # main slots are clamped to N_b; each token a CTA holds brings its own extra
    # slots (folded CTAs hold up to all q tokens)
    slots = min(stride, c + q) + (q if fold else 1) * extra
    assert p <= max(1, math.ceil(slots / KEYS_PER_TILE))


@given(batch, heads, q_len, cache, sms, resident, st.integers(1, 5_000_000))
def test_a_window_counts_only_the_keys_it_shows(b, h, q, c, sm, res, w):
    """With a window W the splits cut the W + q - 1 keys the tokens see: the
    plan is that of a cache of min(C, W - 1) keys."""
    assert (choose_num_partitions(b, h, q, c, window=w, sm_count=sm, resident_ctas=res)
            == choose_num_partitions(b, h, q, min(c, w - 1), sm_count=sm, resident_ctas=res))


def test_a_short_window_over_a_long_cache_is_not_split_like_the_cache():
    assert choose_num_partitions(1, 16, 1, 1_000_000) == MAX_PARTITIONS
    # the window's 512 keys are 16 tiles: one split each, not 64 splits of which 48 are empty
    assert choose_num_partitions(1, 16, 1, 1_000_000, window=512) == 16
    assert choose_num_partitions(1, 16, 1, 1_000_000, window=32) == 1


@given(st.integers(1, 64), st.integers(1, 4), st.integers(0, 4096), st.integers(1, 1024), sms)
def test_folded_extra_slots_count_once_per_token(b, q, stride, extra, sm):
    """A folded 16-head CTA holds all q <= 4 tokens of a sequence, and each brings
    its own extra slots: planning sees q x extra of them, as the kernel's slot axis."""
    c = 1_000_000     # so that indices_stride, not the cache, bounds the main slots
    assert (choose_num_partitions(b, 16, q, c, sparse_mla=True, fold_shared_index=True,
                                  indices_stride=stride, extra_indices_stride=extra, sm_count=sm)
            == choose_num_partitions(b, 16, q, c, sparse_mla=True, fold_shared_index=True,
                                     indices_stride=stride + q * extra, sm_count=sm))


@given(st.data(), cache, sms)
def test_zero_work_gives_one_partition(data, c, sm):
    b, h, q = data.draw(batch), data.draw(heads), data.draw(q_len)
    which = data.draw(st.sampled_from(["batch", "heads", "q"]))
    b, h, q = (0 if which == "batch" else b, 0 if which == "heads" else h,
               0 if which == "q" else q)
    assert choose_num_partitions(b, h, q, c, sm_count=sm) == 1
    assert choose_num_partitions(b, h, q, c, sm_count=sm, sparse_mla=True,
                                 indices_stride=2048, extra_indices_stride=64) == 1


@given(st.integers(1, 128), st.integers(1, 8), st.integers(0, 4_000_000), sms,
       st.integers(1, 4), resident)
def test_exactly_full_waves_are_never_split(h, q, c, sm, waves, res):
    """When batch x row_tiles fills whole waves of CTAs (no tail), a split only
    adds work: P == 1 for any key count, whatever the occupancy."""
    row_tiles, tile = _dense_row_tiles(h, q, res)
    slots = sm * res[tile]
    b = waves * slots // math.gcd(row_tiles, slots)   # b * row_tiles is a multiple of slots
    assert (b * row_tiles) % slots == 0 and b * row_tiles >= slots
    assert choose_num_partitions(b, h, q, c, sm_count=sm, resident_ctas=res) == 1


@given(st.data(), st.integers(0, 4_000_000), sms.filter(lambda n: n >= 8), resident)
def test_one_row_tile_on_an_idle_gpu_is_split_when_keys_allow(data, c, sm, res):
    """B=1 with one row tile leaves all but one CTA slot idle: with 16+ key
    tiles the host must split (P >= 2)."""
    q = data.draw(st.integers(1, 8))
    h = data.draw(st.integers(1, 16 // q))
    assert _dense_row_tiles(h, q, res)[0] == 1
    p = choose_num_partitions(1, h, q, c, sm_count=sm, resident_ctas=res)
    if math.ceil((c + q) / KEYS_PER_TILE) >= 16:
        assert p >= 2, (h, q, c, sm, p)
    else:
        assert p <= math.ceil((c + q) / KEYS_PER_TILE)


def test_single_long_sequence_uses_many_partitions():
    assert choose_num_partitions(1, 16, 1, 1_000_000) >= 32
    assert choose_num_partitions(1, 128, 1, 1_000_000) >= 32
    assert choose_num_partitions(1, 16, 1, 1_000_000, sparse_mla=True,
                                 indices_stride=1_000_000) >= 32


@pytest.mark.parametrize("kw,expected", [
    # docstring examples on a 132-SM H200 (moderate cache lengths)
    (dict(batch_size=128, num_heads=128, q_max_seq_len=1, max_cache_length=4096), 1),
    (dict(batch_size=128, num_heads=16, q_max_seq_len=1, max_cache_length=4096), 2),
    (dict(batch_size=128, num_heads=128, q_max_seq_len=1, max_cache_length=1 << 20), 17),
    # no keys beyond one tile: nothing to split
    (dict(batch_size=1, num_heads=16, q_max_seq_len=1, max_cache_length=31), 1),
])
def test_documented_examples(kw, expected):
    assert choose_num_partitions(**kw, sm_count=H200_SMS) == expected


@pytest.mark.parametrize("name", ["batch_size", "num_heads", "q_max_seq_len",
                                  "max_cache_length", "sm_count"])
@pytest.mark.parametrize("bad", [-1, True, False, 2.0, "4", None])
def test_bad_arguments_raise_value_error_naming_them(name, bad):
    kw = dict(batch_size=2, num_heads=16, q_max_seq_len=1, max_cache_length=100,
              sm_count=H200_SMS)
    kw[name] = bad
    with pytest.raises(ValueError, match=f"^{name}: expected an int >= 0"):
        choose_num_partitions(**kw)


@pytest.mark.parametrize("kw", [dict(window=0), dict(window=-1), dict(window=True),
                                dict(window=2.0), dict(window="8"),
                                dict(window=8, sparse_mla=True, indices_stride=64)])
def test_bad_window_raises_naming_it(kw):
    with pytest.raises(ValueError, match=r"^window: .*expected .*got"):
        choose_num_partitions(2, 16, 1, 100, **kw)


def test_layout_is_no_longer_an_argument():
    """Bytes per key move every P alike; the layout enters only through resident_ctas."""
    with pytest.raises(TypeError):
        choose_num_partitions(2, 16, 1, 100, layout="fp8")


# ------------------------------------------------------------ tile_rows_for

@given(st.integers(0, 100_000))
def test_tile_rows_for_is_smallest_tile_holding_the_rows(rows):
    t = tile_rows_for(rows)
    assert t in TILE_ROWS
    fitting = [r for r in TILE_ROWS if rows <= r]
    assert t == (min(fitting) if fitting else max(TILE_ROWS))


@pytest.mark.parametrize("rows,tile", [(0, 16), (1, 16), (16, 16), (17, 32), (32, 32),
                                       (33, 64), (64, 64), (65, 64), (128, 64), (2048, 64)])
def test_tile_rows_for_boundaries(rows, tile):
    assert tile_rows_for(rows) == tile


# ------------------------------------------------------------ variant names

ALL = all_variants()


@pytest.mark.parametrize("key", ALL, ids=lambda k: k.name)
def test_every_variant_round_trips_through_its_name(key):
    back = parse(key.name)
    assert back == key and back.name == key.name and type(back) is type(key)
    assert str(key) == key.name


def test_variant_lists():
    names = [k.name for k in ALL]
    assert len(names) == len(set(names))
    kinds = [type(k).__name__ for k in ALL]
    assert kinds == sorted(kinds, key=["DecodeKey", "CombineKey", "QuantizeKey", "CheckKey"].index)
    assert names[-1] == "mla_check_inputs" and kinds.count("CheckKey") == 1
    assert [k.name for k in ALL if isinstance(k, CombineKey)] == [
        "mla_combine_bf16", "mla_combine_fp16", "mla_combine_bf16_warp_rows", "mla_combine_fp16_warp_rows"]
    assert len([k for k in ALL if isinstance(k, QuantizeKey)]) == 6 * 3
    decode = [k for k in ALL if isinstance(k, DecodeKey)]
    # dense bf16/fp16: 2 layouts x 3 masks x 2 d_qk x (3 portable tile shapes + the ring, the
    # seesaw with its _multicast twin and the narrow kernel's two tiles, each narrow one with
    # its _evict_first twin), and the _segments twins of the _multicast ones at D_qk 576 with
    # the null and causal masks
    dense16 = [k for k in decode if k.sparsity is Sparsity.DENSE
               and k.layout in (Layout.BF16, Layout.FP16)]
    assert len(dense16) == 2 * 3 * 2 * (3 + 1 + 2 + 2 * 2) + 2 * 2
    persistent = [k for k in dense16 if k.segments]
    assert len(persistent) == 2 * 2 and all(k.name.endswith("_hopper_seesaw_multicast_segments") and k.d_qk == 576
                                            and k.mask.value in ("null", "causal") for k in persistent)
    assert not any(k.segments for k in decode if k not in dense16)
    dense16 = [k for k in dense16 if not k.segments]
    twins = [k for k in dense16 if k.evict_first]
    assert len(twins) == 2 * 3 * 2 * 2 and all(k.name.endswith("_hopper_narrow_evict_first") for k in twins)
    assert {dataclasses.replace(k, evict_first=False) for k in twins} == {
        k for k in dense16 if k.schedule.value == "narrow" and not k.evict_first}
    clustered = [k for k in dense16 if k.multicast]
    assert len(clustered) == 2 * 3 * 2 and all(k.name.endswith("_hopper_seesaw_multicast") for k in clustered)
    assert {dataclasses.replace(k, multicast=False) for k in clustered} == {
        k for k in dense16 if k.schedule.value == "seesaw" and not k.multicast}
    assert not any(k.multicast for k in decode if k not in dense16 and k not in persistent)
    # sparse bf16/fp16: 2 layouts x 2 masks x 2 folds x 2 d_qk x (3 portable + the hopper one)
    sparse16 = [k for k in decode if k.sparsity is Sparsity.SPARSE
                and k.layout in (Layout.BF16, Layout.FP16)]
    assert len(sparse16) == 2 * 2 * 2 * 2 * (3 + 1)
    # fp8_ds_mla (576 only) and fp8 with bf16 queries (576 and 512): the producer's
    # byte records; e4m3 queries (_qfp8) and fp8_rope_aware stay portable
    byte_records = [k for k in decode if k.layout in (Layout.FP8_DS_MLA, Layout.FP8) and not k.q_fp8
                    and k.tile_rows == 64 and k.backend.value == "portable"]
    assert len(byte_records) == (3 + 2 * 2) * (1 + 2)
    assert {k.name for k in decode if k.backend.value == "hopper" and k.schedule.value == "ring"} == {
        k.name + "_hopper" for k in dense16 + sparse16 + byte_records
        if k.tile_rows == 64 and k.backend.value == "portable"}
    # the seesaw schedule: a second Hopper kernel of each dense bf16/fp16 variant, and its
    # `_multicast` twin
    assert {k.name for k in decode if k.schedule.value == "seesaw" and not k.segments} == {
        k.name + "_hopper_seesaw" + twin for k in dense16 if k.tile_rows == 64 and k.backend.value == "portable"
        for twin in ("", "_multicast")}
    # the narrow schedule: a third, with 16- and 32-row tiles, also over the byte records (dense or sparse)
    all_records = [k for k in decode if k.layout in (Layout.FP8_DS_MLA, Layout.FP8) and not k.q_fp8]
    assert {k.name for k in decode if k.schedule.value == "narrow" and not k.evict_first} == {
        k.name + "_hopper_narrow" for k in dense16 + all_records
        if k.tile_rows in (16, 32) and k.backend.value == "portable"}
    # every valid combination is listed
    assert DecodeKey(Layout.FP8_DS_MLA, Mask.NULL, Sparsity.SPARSE, True, 576, False, 16) in ALL
    assert DecodeKey(Layout.FP8, Mask.CAUSAL, Sparsity.DENSE, False, 512, True, 32) in ALL


@pytest.mark.parametrize("kw", [
    dict(evict_first=True),                                              # the portable kernel
    dict(evict_first=True, backend="hopper"),                            # the ring
    dict(evict_first=True, backend="hopper", schedule="seesaw"),
    dict(evict_first=True, backend="hopper", schedule="narrow", tile_rows=16, layout="fp8"),
    dict(multicast=True),                                                # the portable kernel
    dict(multicast=True, backend="hopper"),                              # the ring
    dict(multicast=True, backend="hopper", schedule="narrow", tile_rows=16),
    dict(fold=True),                                                     # fold without sparse
    dict(fold=True, sparsity="dense", layout="fp8"),
    dict(sparsity="sparse", mask="sliding_window_causal"),
    dict(q_fp8=True),                                                    # qfp8 with bf16
    dict(q_fp8=True, layout="fp8_rope_aware"),
    dict(q_fp8=True, layout="fp16"),
    dict(layout="fp8_ds_mla", d_qk=512),
    dict(layout="fp8_rope_aware", d_qk=512),
    dict(d_qk=640),
    dict(tile_rows=48),
    dict(tile_rows=128),
    dict(layout="int4"),
    dict(mask="window"),
    dict(sparsity="topk"),
    dict(backend="hopper", layout="fp8_rope_aware"),                      # hopper: 16-bit caches, fp8, ds_mla
    dict(backend="hopper", layout="fp8", sparsity="sparse", q_fp8=True),  # e4m3 queries stay portable
    dict(backend="hopper", schedule="seesaw", layout="fp8"),
    dict(backend="hopper", tile_rows=16),
    dict(backend="cuda"),
    dict(schedule="seesaw"),                                             # the seesaw is a hopper kernel
    dict(backend="hopper", schedule="seesaw", sparsity="sparse"),       # of dense 16-bit caches
    dict(backend="hopper", schedule="seesaw", layout="fp8_ds_mla"),
    dict(backend="hopper", schedule="spiral"),
], ids=lambda kw: ",".join(f"{k}={v}" for k, v in kw.items()))
def test_invalid_key_combinations_raise(kw):
    with pytest.raises(ValueError):
        DecodeKey(**kw)


@pytest.mark.parametrize("name", [
    "mla_decode_bf16_causal_dense_fold1",                 # fold without sparse
    "mla_decode_bf16_sliding_window_causal_sparse_fold0",  # sparse + window
    "mla_decode_bf16_causal_dense_fold0_qfp8",            # qfp8 with bf16
    "mla_decode_fp8_ds_mla_causal_dense_fold0_qk512",     # no 512 for fp8_ds_mla
    "mla_decode_bf16_causal_dense_fold0_m48",             # tile rows
    "mla_decode_bf16_causal_dense_fold0_seesaw",          # the seesaw is a hopper kernel
    "mla_decode_bf16_causal_sparse_fold0_hopper_seesaw",  # of dense caches
    "mla_decode_bf16_causal_dense_fold0_seesaw_hopper",   # suffix order
])
def test_names_of_invalid_combinations_raise(name):
    with pytest.raises(ValueError):
        parse(name)


@pytest.mark.parametrize("name,canonical", [
    ("mla_decode_bf16_causal_dense_fold0_m64", "mla_decode_bf16_causal_dense_fold0"),
    ("mla_decode_fp16_null_dense_fold0_qk512_m016", "mla_decode_fp16_null_dense_fold0_qk512_m16"),
])
def test_non_canonical_names_raise(name, canonical):
    with pytest.raises(ValueError, match="not canonical") as info:
        parse(name)
    assert canonical in str(info.value)


@pytest.mark.parametrize("name", [
    "", "mla_decode", "garbage", "mla_combine_fp8", "mla_combine_bf16 ", " mla_combine_bf16",
    "MLA_DECODE_BF16_CAUSAL_DENSE_FOLD0", "mla_decode_bf16_causal_dense_fold2",
    "mla_decode_bf16_causal_dense", "mla_decode_bf16_causal_dense_fold0_qk576",
    "mla_decode_bf16_causal_dense_fold0_m16_qk512",        # suffixes out of order
    "mla_decode_bf16_causal_dense_fold0.cu", "mla_decode_int4_causal_dense_fold0",
])
def test_garbage_names_raise(name):
    with pytest.raises(ValueError):
        parse(name)


@given(st.text(alphabet="abcdefilmnoqrstuw_0123456789", max_size=60))
def test_parse_returns_exactly_that_name_or_raises(name):
    try:
        key = parse(name)
    except ValueError:
        return
    assert key.name == name


def test_combine_key_validation():
    assert parse("mla_combine_fp16") == CombineKey("fp16")
    assert parse("mla_combine_bf16_warp_rows") == CombineKey("bf16", warp_rows=True)
    with pytest.raises(ValueError):
        parse("mla_combine_bf16_warp")
    with pytest.raises(TypeError, match="warp_rows"):
        CombineKey("bf16", warp_rows=1)
    with pytest.raises(ValueError):
        CombineKey("fp32")


def test_tile_falls_back_to_fit_a_smaller_shared_memory(monkeypatch):
    """An A100 (163 KiB per block) gets 32-row tiles where an H200 runs 64."""
    from mla_cupy import dispatch

    monkeypatch.setattr(dispatch, "_smem_limit", lambda device_id: 163 * 1024)
    key = dispatch._fitting_key(0, 64, layout="bf16", mask="causal", sparsity="dense",
                                fold=False, d_qk=576)
    assert key.tile_rows == 32
    monkeypatch.setattr(dispatch, "_smem_limit", lambda device_id: 227 * 1024)
    assert dispatch._fitting_key(0, 64, layout="bf16", mask="causal", sparsity="dense",
                                 fold=False, d_qk=576).tile_rows == 64
    monkeypatch.setattr(dispatch, "_smem_limit", lambda device_id: 48 * 1024)
    with pytest.raises(ValueError, match="shared memory"):
        dispatch._fitting_key(0, 64, layout="bf16", mask="causal", sparsity="dense",
                              fold=False, d_qk=576)


@pytest.mark.parametrize("arch,backend,kw,expected", [
    ("sm_90a", None, {}, True),
    ("sm_90a", "hopper", dict(layout="fp16", d_qk=512, mask="sliding_window_causal"), True),
    ("sm_90a", "portable", {}, False),
    ("sm_90a", "auto", dict(sparsity="sparse"), True),
    ("sm_90a", "hopper", dict(sparsity="sparse"), True),
    ("sm_90a", "auto", dict(sparsity="sparse", fold=True, layout="fp16"), True),
    ("sm_90a", "auto", dict(sparsity="sparse", layout="fp8_ds_mla"), True),
    ("sm_90a", "auto", dict(layout="fp8_ds_mla"), True),
    ("sm_90a", "auto", dict(layout="fp8"), True),
    ("sm_90a", "auto", dict(layout="fp8", q_fp8=True), False),
    ("sm_90a", "auto", dict(layout="fp8_rope_aware"), False),
    ("sm_90a", "auto", dict(tile_rows=16), True),     # any tile: the family runs 64-row tiles
    ("sm_89", "auto", {}, False),
    ("sm_80", "hopper", {}, False),
])
def test_runs_hopper_is_one_rule_for_dispatch_and_planning(monkeypatch, arch, backend, kw, expected):
    from mla_cupy import compiler
    monkeypatch.setattr(compiler, "device_arch", lambda device_id: arch)
    monkeypatch.delenv("MLA_CUPY_BACKEND", raising=False)
    assert compiler.runs_hopper(DecodeKey(**kw), 0, backend) is expected


def test_runs_hopper_reads_the_environment(monkeypatch):
    from mla_cupy import compiler
    monkeypatch.setattr(compiler, "device_arch", lambda device_id: "sm_90a")
    monkeypatch.setenv("MLA_CUPY_BACKEND", "portable")
    assert compiler.runs_hopper(DecodeKey(), 0) is False
    monkeypatch.setenv("MLA_CUPY_BACKEND", "cuda")
    with pytest.raises(ValueError, match="MLA_CUPY_BACKEND"):
        compiler.runs_hopper(DecodeKey(), 0)


@pytest.mark.parametrize("backend,sparsity,layout,expected", [
    ("auto", "sparse", "bf16", True),            # sparse h4: Hopper 98 vs portable 129 us (compiler.py)
    ("auto", "sparse", "fp8_ds_mla", True),
    ("auto", "sparse", "fp8", True),
    ("portable", "sparse", "bf16", False),       # forced: the portable family still runs it
    ("auto", "dense", "bf16", True),             # dense 16-bit: Hopper at every row count
    ("auto", "dense", "fp8_ds_mla", True),
    ("auto", "dense", "fp8", True),              # dense fp8 up to 32 rows: the narrow kernel (h24 310 vs 625 us)
])
def test_runs_hopper_by_variant(monkeypatch, backend, sparsity, layout, expected):
    """The variants that run the Hopper family under "auto", at any row count (the
    portable kernels' window for dense fp8 at 17-31 rows went to the narrow 32-row tile)."""
    from mla_cupy import compiler
    monkeypatch.setattr(compiler, "device_arch", lambda device_id: "sm_90a")
    monkeypatch.delenv("MLA_CUPY_BACKEND", raising=False)
    key = DecodeKey(sparsity=sparsity, layout=layout)
    assert compiler.runs_hopper(key, 0, backend) is expected



HOPPER_DENSE = dict(backend="hopper")


@pytest.mark.parametrize("env,kw,page_size,group_rows,expected", [
    (None, HOPPER_DENSE, 64, 128, "seesaw"),                    # h128: full 64-row tiles
    (None, HOPPER_DENSE, 64, 65, "seesaw"),                     # more than one 64-row tile
    (None, HOPPER_DENSE, 64, 64, "ring"),                       # h64: one tile, bound by loads
    (None, HOPPER_DENSE, 64, 16, "narrow"),                     # h16: keys as M, 16 rows' MMA work
    (None, HOPPER_DENSE, 8, 1, "narrow"),
    (None, HOPPER_DENSE, 64, 17, "ring"),                       # 17-32 rows: the ring's padded tile (session 32)
    (None, HOPPER_DENSE, 64, 33, "ring"),                       # more rows than the narrow tiles
    (None, HOPPER_DENSE, 1, 16, "ring"),                        # TMA cannot load 1-row pages
    (None, dict(HOPPER_DENSE, sparsity="sparse"), 64, 16, "ring"),
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla"), 64, 16, "narrow"),   # records: 16 rows or fewer
    (None, dict(HOPPER_DENSE, layout="fp8", d_qk=512), 3, 16, "narrow"),
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla"), 64, 17, "narrow"),   # the 32-row tile: h24 352 vs ring 373 us
    (None, dict(HOPPER_DENSE, layout="fp8"), 64, 32, "narrow"),          # h32 306 vs ring 348 us
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla"), 3, 32, "narrow"),    # records: any page size
    (None, dict(HOPPER_DENSE, layout="fp8"), 64, 33, "ring"),            # more rows than the narrow tiles
    ("ring", HOPPER_DENSE, 64, 16, "ring"),
    ("narrow", HOPPER_DENSE, 64, 32, "narrow"),                 # forced: the 32-row tile
    ("narrow", HOPPER_DENSE, 64, 33, "ring"),                   # forced, but 33 rows: the ring
    (None, HOPPER_DENSE, 64, 32, "ring"),                       # ds_h32_sq1: 167.4 vs narrow 173.0 us
    ("narrow", dict(HOPPER_DENSE, layout="fp16", d_qk=512), 16, 12, "narrow"),
    ("narrow", dict(HOPPER_DENSE, layout="fp8_ds_mla"), 3, 16, "narrow"),   # records: any page size
    ("narrow", dict(HOPPER_DENSE, layout="fp8", d_qk=512), 1, 16, "narrow"),
    ("narrow", dict(HOPPER_DENSE, layout="fp8_ds_mla"), 64, 33, "ring"),
    ("narrow", dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse", mask="null"), 64, 16, "narrow"),
    ("narrow", dict(HOPPER_DENSE, sparsity="sparse"), 64, 16, "ring"),     # sparse bf16: the ring
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse", mask="null"), 64, 16, "narrow"),  # 101 vs ring 105 us
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse", mask="null"), 1, 8, "narrow"),   # any page size
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse", fold=True), 64, 16, "narrow"),
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse"), 64, 32, "narrow"),  # h32: 102.0 vs ring 109.9 us (H100)
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse"), 64, 33, "ring"),
    (None, dict(HOPPER_DENSE, layout="fp8", sparsity="sparse"), 64, 16, "narrow"),        # b128 h16: 96.6 vs ring 100.9 us
    (None, dict(HOPPER_DENSE, layout="fp8", sparsity="sparse"), 64, 17, "narrow"),
    (None, dict(HOPPER_DENSE, layout="fp8", sparsity="sparse"), 64, 33, "ring"),
    (None, HOPPER_DENSE, 1, 128, "ring"),                       # TMA cannot load 1-row pages
    (None, HOPPER_DENSE, 24, 128, "ring"),
    (None, dict(HOPPER_DENSE, layout="fp16", d_qk=512), 16, 128, "seesaw"),
    (None, dict(HOPPER_DENSE, sparsity="sparse"), 64, 128, "ring"),
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse"), 64, 128, "pair"),   # h128: clusters of 2
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse"), 64, 64, "ring"),    # one tile a token
    (None, dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse", fold=True), 64, 128, "ring"),
    ("pair", dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse"), 64, 128, "pair"),   # forced: clusters of 2
    ("pair", dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse", mask="null"), 1, 128, "pair"),   # any page
    ("pair", dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse"), 64, 192, "ring"),   # not whole pairs
    ("pair", dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse", fold=True), 64, 128, "ring"),
    ("pair", dict(HOPPER_DENSE, layout="fp8", sparsity="sparse"), 64, 128, "ring"),
    ("ring", dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse"), 64, 128, "ring"),
    ("pair", HOPPER_DENSE, 64, 128, "ring"),                    # forced, not a pair variant
    ("pair", dict(HOPPER_DENSE, layout="fp8_ds_mla", sparsity="sparse"), 64, 64, "ring"),
    ("ring", HOPPER_DENSE, 64, 128, "ring"),
    ("seesaw", HOPPER_DENSE, 64, 16, "seesaw"),                 # forced
    ("seesaw", HOPPER_DENSE, 1, 16, "seesaw"),                  # forced: the launch reports the page size
    ("seesaw", dict(HOPPER_DENSE, sparsity="sparse"), 64, 128, "ring"),   # not a seesaw variant
    ("auto", HOPPER_DENSE, 64, 128, "seesaw"),
])
def test_choose_hopper_schedule(monkeypatch, env, kw, page_size, group_rows, expected):
    from mla_cupy import compiler
    if env is None:
        monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    else:
        monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", env)
    got = compiler.choose_hopper_schedule(DecodeKey(**kw), page_size, group_rows)
    assert got.value == expected


@pytest.mark.parametrize("layout", ["fp8_ds_mla", "fp8"])
@pytest.mark.parametrize("split_keys, expected", [
    (None, "narrow"),      # no call planned (the CLI's lists): the rows decide
    (2048, "narrow"),      # b128 top-2048, one split: 101.4 vs ring 104.3 us
    (4096, "narrow"),
    (2047, "ring"),
    (1024, "ring"),        # b64, two splits: narrow 62.8 vs ring 61.5 us
    (512, "ring"),         # b32, four splits: 40.8 vs 38.7 us
])
def test_sparse_narrow_calls_need_long_splits(monkeypatch, layout, split_keys, expected):
    """auto gives sparse fp8 records the narrow kernel only where a split holds
    compiler.NARROW_SPARSE_MIN_SPLIT_KEYS keys or more (its fixed cost a CTA is the
    larger); dense calls and forced schedules do not look at split_keys."""
    from mla_cupy import compiler
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    sparse = DecodeKey(**dict(HOPPER_DENSE, layout=layout, sparsity="sparse", mask="null"))
    assert compiler.choose_hopper_schedule(sparse, 64, 16, split_keys).value == expected
    assert compiler.choose_hopper_schedule(DecodeKey(**dict(HOPPER_DENSE, layout=layout)), 64, 16,
                                           split_keys).value == "narrow"
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "narrow")
    assert compiler.choose_hopper_schedule(sparse, 64, 16, split_keys).value == "narrow"


@pytest.mark.parametrize("indices_stride, extra, num_partitions, split_len, expected", [
    (2048, 0, 1, 0, 2048),
    (2048, 0, 4, 0, 512),
    (2048, 0, 3, 0, 683),        # the longest split
    (2048, 512, 2, 0, 1280),     # the extra stream's rows count
    (2048, 0, 1, 1024, 1024),    # a fixed split length (batch_invariant)
    (512, 0, 1, 1024, 512),
])
def test_sparse_split_keys(indices_stride, extra, num_partitions, split_len, expected):
    from mla_cupy import dispatch
    from mla_cupy.validate import SparseArgs
    sparse = SparseArgs(d_indices=None, indices_stride=indices_stride, topk_lengths=None, logical_indices=None,
                        extra_k=object() if extra else None, extra_d_indices=None,
                        extra_indices_stride=extra, extra_topk_lengths=None)
    assert dispatch.sparse_split_keys(sparse, num_partitions, split_len) == expected
    assert dispatch.sparse_split_keys(None, num_partitions, split_len) is None


@pytest.mark.parametrize("group_rows, tile_rows", [(1, 16), (16, 16), (17, 32), (32, 32)])
def test_the_narrow_key_takes_the_tile_of_its_row_group(monkeypatch, group_rows, tile_rows):
    from mla_cupy import compiler
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "narrow")
    key = compiler.hopper_key(DecodeKey(), 64, group_rows)
    assert key.schedule.value == "narrow" and key.tile_rows == tile_rows
    assert key.name.endswith(f"_m{tile_rows}_hopper_narrow")


def test_an_unknown_hopper_schedule_is_an_error(monkeypatch):
    from mla_cupy import compiler
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "64x2")
    with pytest.raises(ValueError, match="MLA_CUPY_HOPPER_SCHEDULE.*64x2"):
        compiler.choose_hopper_schedule(DecodeKey(**HOPPER_DENSE), 64, 128)


@given(st.integers(1, 5000))
def test_combine_threads_follow_the_split_count(num_partitions):
    """One 128-thread group per four splits, one to eight groups: enough loads
    in flight when few rows have many splits, and a row's summation order fixed
    by P alone (the function has no other input)."""
    from mla_cupy.render import COMBINE_GROUP_THREADS, COMBINE_MAX_GROUPS, COMBINE_UNROLL, combine_threads
    threads = combine_threads(num_partitions)
    groups, rest = divmod(threads, COMBINE_GROUP_THREADS)
    assert rest == 0 and 1 <= groups <= COMBINE_MAX_GROUPS and threads <= 1024
    assert groups == COMBINE_MAX_GROUPS or (groups - 1) * COMBINE_UNROLL < num_partitions <= groups * COMBINE_UNROLL


def test_builds_for_matches_the_architectures_of_each_family():
    """The wgmma family is sm_90a code (sm_90 only), the fp8 quantisers need
    sm_89's e4m3 conversions, the portable kernels run from sm_80; the combine
    declares no minimum."""
    from mla_cupy.variants import builds_for
    portable = next(k for k in ALL if isinstance(k, DecodeKey) and not k.name.endswith(("_hopper", "_seesaw")))
    hopper = next(k for k in ALL if isinstance(k, DecodeKey) and k.name.endswith("_hopper"))
    quantize = next(k for k in ALL if isinstance(k, QuantizeKey))
    table = {cc: (builds_for(portable, cc), builds_for(hopper, cc), builds_for(quantize, cc),
                  builds_for(CombineKey("bf16"), cc)) for cc in (75, 80, 86, 89, 90, 100)}
    assert table == {75: (False, False, False, True), 80: (True, False, False, True),
                     86: (True, False, False, True), 89: (True, False, True, True),
                     90: (True, True, True, True), 100: (True, False, True, True)}


@pytest.mark.parametrize("host_batch, clusters_per_z, sms, expected", [
    (128, 1, 132, 66),     # b128 s_q1 h128: 66 clusters fill the SMs; 62 of them run two tokens
    (128, 2, 132, 33),     # s_q2: two row-tile pairs a sequence
    (2, 26, 132, 2),       # b2 s_q2 P=13: 52 clusters need no later jobs
    (66, 1, 132, 66),      # one job a cluster
    (4096, 1, 132, 128),   # the job table (PAIR_MAX_JOBS a CTA) bounds the jobs
    (5, 1, 2, 1),          # one cluster runs every job
    (1, 1, 1, 1),
])
def test_pair_grid_z(host_batch, clusters_per_z, sms, expected):
    z = S.pair_grid_z(host_batch, clusters_per_z, sms)
    assert z == expected
    assert -(-host_batch // z) <= S.PAIR_MAX_JOBS


@pytest.mark.parametrize("name, bad", [("host_batch", 0), ("clusters_per_z", -1), ("sm_count", True),
                                       ("host_batch", 2.0)])
def test_pair_grid_z_rejects_bad_arguments(name, bad):
    kw = {**dict(host_batch=8, clusters_per_z=2, sm_count=132), name: bad}
    with pytest.raises(ValueError, match=name):
        S.pair_grid_z(**kw)


def test_the_pair_model_picks_the_splits_measured_best():
    """The pair schedule in the split model (whole 64-slot tiles, its partials' cost:
    PAIR_*) picks the P measured best on the H200 at 128 heads top-2048 (session 23's
    sweeps: b1 s_q1 16-32 within 0.4 us, b2 s_q1 16, b2 s_q2 8, b4 s_q2 8, b8 s_q2 4,
    b16 s_q2 2, b32 s_q2 1, b128 1), where the 32-key model took 13 at b2 s_q2."""
    pair = dict(sparse_mla=True, indices_stride=2048, tile_rows=64, keys_per_tile=S.PAIR_KEYS_PER_TILE,
                tile_cost=S.PAIR_TILE_COST, partial_cost=S.PAIR_PARTIAL_COST)
    plain = dict(sparse_mla=True, indices_stride=2048, tile_rows=64)
    assert S.choose_num_partitions(2, 128, 2, 32768, **plain) == 13
    for b, s, p in ((1, 1, 16), (2, 1, 16), (2, 2, 8), (4, 2, 8), (8, 2, 4), (16, 2, 2), (32, 2, 1),
                    (128, 1, 1), (128, 2, 1)):
        assert S.choose_num_partitions(b, 128, s, 32768, **pair) == p, (b, s)
    # a split of the pair never holds less than one of its tiles
    for b in (1, 2, 3):
        p = S.choose_num_partitions(b, 128, 1, 32768, sparse_mla=True, indices_stride=200, tile_rows=64,
                                    keys_per_tile=64, tile_cost=1.8)
        assert p <= math.ceil(200 / 64)


@pytest.mark.parametrize("name, bad", [("keys_per_tile", 0), ("keys_per_tile", 64.0), ("keys_per_tile", True),
                                       ("tile_cost", 0), ("tile_cost", float("inf")), ("tile_cost", "1"),
                                       ("partial_cost", -1.0), ("partial_cost", float("nan"))])
def test_the_tile_model_rejects_bad_arguments(name, bad):
    with pytest.raises(ValueError, match=name):
        S.choose_num_partitions(2, 128, 2, 32768, sparse_mla=True, indices_stride=2048, **{name: bad})


@pytest.mark.parametrize("env, layout, fold, group_rows, expected", [
    (None, "fp8_ds_mla", False, 128, True), ("pair", "fp8_ds_mla", False, 256, True),
    ("auto", "fp8_ds_mla", False, 64, False), (None, "fp8_ds_mla", True, 128, False),
    (None, "fp8", False, 128, False), ("ring", "fp8_ds_mla", False, 128, False),
    ("seesaw", "fp8_ds_mla", False, 128, False)])
def test_takes_pair_is_the_dispatchers_rule_and_the_splits(monkeypatch, env, layout, fold, group_rows, expected):
    from mla_cupy import compiler
    from mla_cupy.scalar_args import _pair_plan
    from mla_cupy.variants import Backend, DecodeKey, Layout, Sparsity
    if env is None:
        monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    else:
        monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", env)
    key = DecodeKey(layout=Layout(layout), sparsity=Sparsity.SPARSE, fold=fold)
    assert compiler.takes_pair(key, group_rows) is expected
    assert _pair_plan(layout, True, fold, group_rows) is expected
    hopper = DecodeKey(layout=Layout(layout), sparsity=Sparsity.SPARSE, fold=fold, backend=Backend.HOPPER)
    assert (compiler.choose_hopper_schedule(hopper, 64, group_rows).value == "pair") is expected

