"""One source for each fact (CPU only): the kernel signatures that the templates
render agree with the argument tuples the host builds; enums, record offsets
and the row->CTA mapping reach the kernels from the Python that defines them;
each variant renders only the code it uses; an installed layout finds every
template."""
from __future__ import annotations

import pathlib
import re
import tomllib

import numpy as np
import pytest

from mla_cupy import abi, dispatch, records
from mla_cupy.cache import PagedKVCollection
from mla_cupy.plan import ARRAY_PARAMS, RUN_ARRAYS
from mla_cupy.render import (COMBINE_GROUP_THREADS, COMBINE_MAX_GROUPS, COMBINE_UNROLL, kernels_dir,
                             render)
from mla_cupy.schedule import row_tiling
from mla_cupy.validate import SparseArgs
from mla_cupy.variants import CombineKey, DecodeKey, Layout, Mask, QuantizeKey, Sparsity, all_variants

REPO = pathlib.Path(__file__).resolve().parent.parent
DECODE_KEYS = [k for k in all_variants() if isinstance(k, DecodeKey)]
_C_TO_HOST = {"int": np.int32, "i64": np.int64, "float": np.float32}


class Arr:
    """A distinct stand-in for a device array: the test finds it by identity."""

    def __init__(self, name, shape=(4, 1, 2, 576)):
        self.name, self.shape = name, shape

    def __repr__(self):
        return f"Arr({self.name})"


def signature_of(source: str, kernel: str) -> list[tuple[str, str]]:
    """(C type, name) of each parameter of ``extern "C" ... kernel(...)``."""
    m = re.search(r'extern "C" __global__ void[^\n]*\n' + re.escape(kernel) + r"\((.*?)\n\)", source, re.S)
    assert m, f"no extern \"C\" signature of {kernel}"
    body = re.sub(r"//[^\n]*", "", m.group(1))
    params = []
    for decl in (d.strip() for d in body.split(",")):
        decl = decl.replace("__restrict__", " ")
        ctype, name = decl.rsplit(None, 1)
        params.append((" ".join(ctype.replace("*", " *").split()).replace(" *", "*"), name))
    return params


def check_tuple_matches(sig, args, expect: dict):
    """Same count; pointers get arrays (or null), scalars the C type's NumPy
    type; the values the host was given land at their names' positions."""
    assert len(args) == len(sig), (len(args), len(sig))
    for (ctype, name), value in zip(sig, args):
        if ctype.endswith("*"):
            assert isinstance(value, Arr) or (isinstance(value, np.uint64) and value == 0), (name, value)
        elif ctype.startswith("const __grid_constant__ "):   # a struct by value: its bytes
            struct = ctype.split()[-1]
            assert type(value) is bytes and len(value) == abi.STRUCTS[struct], (name, ctype, type(value))
        else:
            assert type(value) is _C_TO_HOST[ctype], (name, ctype, type(value))
        if name in expect:
            want = expect[name]
            assert value is want if isinstance(want, Arr) else value == want, (name, value, want)


def _kv(name, page_size, num_layers, layout=Layout.BF16):
    width = records.row_width(layout, records.D_QK, records.cache_dtypes(layout)[0])
    kv = object.__new__(PagedKVCollection)   # no validation: these arrays are stand-ins
    kv.blocks = Arr(f"{name}.blocks", (7, num_layers, page_size, width))
    kv.lookup_table, kv.cache_lengths = Arr(f"{name}.lookup_table", (3, 5)), Arr(f"{name}.cache_lengths")
    kv.page_size, kv.layout, kv.scales = page_size, layout, None
    return kv


def _given(q, offsets, kv, out, lse, sink, scalar_args, sparse=None, q_scale=None) -> dict:
    """The call's arrays by ABI name, as the dispatcher gathers them (call_arrays)."""
    return dict(zip(ARRAY_PARAMS, dispatch.call_arrays(q, out, lse, offsets, kv, sink, scalar_args,
                                                       q_scale, kv.scales, sparse)))


@pytest.mark.parametrize("key", DECODE_KEYS, ids=lambda k: k.name)
def test_decode_signature_and_launch_tuple_agree(key):
    sig = signature_of(render(key), key.name)
    assert [n for _, n in sig] == list(abi.DECODE.names)
    kv = _kv("kv", page_size=16, num_layers=3, layout=key.layout)
    sparse = None
    if key.sparsity is Sparsity.SPARSE:
        extra = _kv("extra", page_size=2, num_layers=4, layout=key.layout)
        sparse = SparseArgs(Arr("d_indices"), 8, Arr("topk_lengths"), Arr("logical_indices"), extra,
                            Arr("extra_d_indices"), 6, Arr("extra_topk_lengths"), None)
    given = _given(Arr("q"), Arr("offsets"), kv, Arr("out"), None, Arr("sink"), Arr("scalar_args"),
                   sparse, q_scale=Arr("q_scale"))
    tiling = row_tiling(5, 16, per_token=key.sparsity is Sparsity.SPARSE and not key.fold,
                        tile_rows=key.tile_rows)
    o_part = Arr("o_part")
    args = abi.DECODE.pack(dispatch.decode_launch_args(
        given, dict(o_part=o_part, lse_part=Arr("lse_part")), kv, sparse, tiling, layer_idx=2,
        scale=0.5, num_tokens=9, num_heads=16, window=11))
    expect = dict(q=given["q"], blocks=kv.blocks, attn_sink=given["attn_sink"], o_part=o_part,
                  q_scale=given["q_scale"], lookup_table=kv.lookup_table,
                  cache_lengths=kv.cache_lengths, input_row_offsets=given["input_row_offsets"],
                  scalar_args=given["scalar_args"], out=given["out"],
                  num_heads=16, num_layers=3, layer_idx=2, page_size=16, lookup_stride=5,
                  window=11, num_tokens=9, scale_log2=np.float32(0.5 * dispatch.LOG2E),
                  group_rows=tiling.group_rows, group_tiles=tiling.group_tiles,
                  main_rows_total=7 * 16, kv_box_rows=0, kv_map=bytes(128))
    if sparse is not None:
        expect.update(d_indices=sparse.d_indices, extra_blocks=sparse.extra_k.blocks,
                      indices_stride=8, extra_stride=6, extra_page_size=2, extra_num_layers=4,
                      extra_rows_total=7 * 2, extra_topk_lengths=sparse.extra_topk_lengths,
                      logical_indices=sparse.logical_indices, topk_lengths=sparse.topk_lengths,
                      extra_d_indices=sparse.extra_d_indices)
    check_tuple_matches(sig, args, expect)
    assert args[abi.DECODE.names.index("lse")] == 0   # None travels as a null pointer


@pytest.mark.parametrize("out_dtype", ["bf16", "fp16"])
def test_combine_signature_and_launch_tuple_agree(out_dtype):
    key = CombineKey(out_dtype)
    sig = signature_of(render(key), key.name)
    assert [n for _, n in sig] == list(abi.COMBINE.names)
    given = _given(Arr("q"), Arr("offsets"), _kv("kv", 16, 1), Arr("out"), Arr("lse"), None,
                   Arr("scalar_args"))
    args = abi.COMBINE.pack(dispatch.combine_launch_args(
        given, dict(o_part=Arr("o_part"), lse_part=Arr("lse_part")), num_heads=16, num_tokens=9,
        num_partitions=3))
    check_tuple_matches(sig, args, dict(out=given["out"], lse=given["lse"], num_heads=16,
                                        num_tokens=9, num_partitions=3,
                                        input_row_offsets=given["input_row_offsets"]))
    assert args[abi.COMBINE.names.index("attn_sink")] == 0
    source = render(key)
    for name, value in (("GROUP_THREADS", COMBINE_GROUP_THREADS), ("MAX_GROUPS", COMBINE_MAX_GROUPS),
                        ("UNROLL", COMBINE_UNROLL)):
        assert f"constexpr int {name} = {value};" in source


def test_array_params_are_the_kernels_pointers():
    """Every address a plan writes per call lands in a pointer parameter; every
    pointer parameter but the plan's own workspace (seg_info lies in it) and the decode's
    DecodeSchedule (set at each launch) is one of them."""
    for kernel_abi, own in ((abi.DECODE, {"o_part", "lse_part", "seg_info", "schedule"}),
                            (abi.COMBINE, {"o_part", "lse_part", "seg_info"})):
        pointers = {p.name for p in kernel_abi.params if p.is_pointer}
        assert pointers - set(ARRAY_PARAMS) == own, kernel_abi.kernel
    assert set(ARRAY_PARAMS) <= {p.name for p in abi.DECODE.params if p.is_pointer}
    assert ARRAY_PARAMS[:RUN_ARRAYS] == ("q", "out", "lse")


@pytest.mark.parametrize("kernel_abi", [abi.DECODE, abi.COMBINE, abi.QUANTIZE], ids=lambda a: a.kernel)
def test_slots_hold_what_pack_gives(kernel_abi):
    """pack_slots (cuLaunchKernel's parameter memory) and pack (CuPy's tuple)
    agree value for value, negative ints and non-integral floats included."""
    rng = np.random.default_rng()
    values = {}
    for p in kernel_abi.params:
        if p.is_pointer:
            values[p.name] = None if p.nullable and rng.random() < 0.3 else int(rng.integers(1, 2**63))
        elif p.is_struct:
            values[p.name] = rng.bytes(abi.STRUCTS[p.ctype])
        elif p.ctype == "float":
            values[p.name] = float(rng.normal()) * 1e3
        else:
            values[p.name] = int(rng.integers(-2**31, 2**31))
    slots = kernel_abi.pack_slots(values)
    assert slots.itemsize == abi.SLOT_BYTES
    assert len(slots) == sum(abi.STRUCTS.get(p.ctype, 8) // 8 for p in kernel_abi.params)
    packed = kernel_abi.pack(values)
    unpacked = kernel_abi.unpack_slots(slots)
    for p, a, b in zip(kernel_abi.params, packed, unpacked):
        if p.is_struct:   # bytes to the driver path, a numpy void scalar to CuPy's
            assert b.dtype == abi.TENSOR_MAP_DTYPE and b.tobytes() == a == values[p.name], p.name
        else:
            assert type(a) is type(b) and a == b, (p.name, a, b, values)
    # kernelParams point at each parameter's first slot; a struct's bytes start there
    params = kernel_abi.param_addresses(1 << 20)
    assert len(params) == len(kernel_abi.params)
    for i, p in enumerate(kernel_abi.params):
        at = kernel_abi.slot_starts[i]
        assert params[i] == (1 << 20) + 8 * at
        if p.is_struct:
            assert slots[at:at + p.slots].tobytes() == values[p.name]
    # the bytes a 4-byte parameter occupies are the low half of its slot
    i = next(i for i, p in enumerate(kernel_abi.params) if p.ctype == "int")
    raw = slots.tobytes()[i * 8:(i + 1) * 8]
    assert np.frombuffer(raw[:4], np.int32)[0] == values[kernel_abi.params[i].name]
    with pytest.raises(TypeError, match="expected an address"):
        kernel_abi.pack_slots(values | {kernel_abi.params[0].name: Arr("x")})


@pytest.mark.parametrize("key", [k for k in all_variants() if isinstance(k, QuantizeKey)],
                         ids=lambda k: k.name)
def test_quantize_signature_comes_from_the_table(key):
    sig = signature_of(render(key), key.name)
    assert [n for _, n in sig] == list(abi.QUANTIZE.names)
    assert [c for c, _ in sig] == [p.ctype for p in abi.QUANTIZE.params]


def test_pack_refuses_missing_extra_and_null_names():
    values = {p.name: (Arr(p.name) if p.is_pointer else 1) for p in abi.COMBINE.params}
    assert len(abi.COMBINE.pack(values)) == len(abi.COMBINE.params)
    with pytest.raises(ValueError, match=r"mla_combine arguments: .*1 missing \['num_tokens'\]"):
        abi.COMBINE.pack({k: v for k, v in values.items() if k != "num_tokens"})
    with pytest.raises(ValueError, match=r"1 extra \['stride'\]"):
        abi.COMBINE.pack(values | {"stride": 3})
    with pytest.raises(ValueError, match="mla_combine argument out: expected a device array"):
        abi.COMBINE.pack(values | {"out": None})
    assert abi.COMBINE.pack(values | {"lse": None})[abi.COMBINE.names.index("lse")] == 0


@pytest.mark.parametrize("key", DECODE_KEYS, ids=lambda k: k.name)
def test_enums_reach_the_kernel_by_name(key):
    src = render(key)
    assert f"constexpr Layout LAYOUT = Layout::{key.layout.value};" in src
    assert f"constexpr Mask MASK = Mask::{key.mask.value};" in src
    assert "enum class Layout { " + ", ".join(x.value for x in Layout) + " };" in src
    assert "enum class Mask { " + ", ".join(x.value for x in Mask) + " };" in src
    assert re.search(r"constexpr QKind Q_KIND = QKind::\w+;", src)


def test_record_facts():
    """The widths and offsets of docs/spec.md §4, and the same numbers in the kernels."""
    assert {(x.value, d): w for (x, d), w in records.ROW_BYTES.items()} == {
        ("bf16", 576): 1152, ("bf16", 512): 1024, ("fp16", 576): 1152, ("fp16", 512): 1024,
        ("fp8", 576): 576, ("fp8", 512): 512, ("fp8_rope_aware", 576): 640, ("fp8_ds_mla", 576): 656}
    assert (records.rope_at("fp8"), records.rope_at("fp8_rope_aware"), records.rope_at("fp8_ds_mla")) \
        == (512, 512, 528)
    assert records.scales_at("fp8_ds_mla") == 512 and records.scales_at("fp8_rope_aware") is None
    assert records.q_width("fp8_rope_aware", 576) == 640 and records.q_width("fp8", 512) == 512
    ds = render(DecodeKey(layout="fp8_ds_mla"))
    for line in ("ROW_BYTES = 656;", "ROPE_AT = 528;", "SCALES_AT = 512;", "GROUP_DIMS = 128;"):
        assert f"constexpr int {line}" in ds
    quant = render(QuantizeKey("fp8_rope_aware", "fp32"))
    assert "constexpr int ROW_BYTES = 640;" in quant and "constexpr int ROPE_AT = 512;" in quant


def test_record_offsets_match_the_quantiser_and_the_reference():
    """records' offsets read back what quantize.py wrote, as the independent
    reference decodes it."""
    from mla_cupy.quantize import quantize_fp8_ds_mla, quantize_fp8_rope_aware
    from mla_cupy.reference import dequantize_rows

    seed = int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    x = rng.standard_normal((3, records.D_QK)).astype(np.float32)
    rec = quantize_fp8_ds_mla(x)
    at = records.scales_at("fp8_ds_mla")
    scales = rec[:, at:at + records.NUM_GROUPS * records.SCALE_BYTES].copy().view("<f4")
    groups = np.abs(x[:, :records.D_LATENT]).reshape(3, records.NUM_GROUPS, records.GROUP_DIMS).max(-1)
    np.testing.assert_allclose(scales, groups / records.E4M3_MAX, rtol=1e-6, err_msg=f"seed={seed}")
    for layout, r, sigma in (("fp8_ds_mla", rec, None), ("fp8_rope_aware", *quantize_fp8_rope_aware(x))):
        k, _ = dequantize_rows(r, layout, sigma)
        ra = records.rope_at(layout)
        rope = (r[:, ra:ra + 2 * records.D_ROPE].copy().view("<u2").astype(np.uint32) << 16).view(np.float32)
        s = 1.0 if sigma is None else sigma[:, None].astype(np.float64)   # the reference decodes in float64
        np.testing.assert_array_equal(k[:, records.D_LATENT:], rope.astype(np.float64) * s,
                                      err_msg=f"{layout} seed={seed}")


def cta_rows(x, seq_len, num_heads, group_rows, group_tiles, block_m):
    """The kernel's cta_rows (kernels/portable/mla_decode.cu.j2), transcribed."""
    g = x // group_tiles
    r0 = g * group_rows + (x % group_tiles) * block_m
    return r0, min(r0 + block_m, (g + 1) * group_rows, seq_len * num_heads)


@pytest.mark.parametrize("per_token", [False, True])
def test_row_tiling_covers_every_row_once(per_token):
    """Host tiling + kernel mapping: each row of every sequence (length up to
    q_max_seq_len) is computed by exactly one CTA; per-token tiles hold one token."""
    seed = int(np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    for _ in range(200):
        q_max, heads = int(rng.integers(1, 9)), int(rng.integers(1, 129))
        tile = int(rng.choice([16, 32, 64])) if rng.random() < 0.5 else None
        t = row_tiling(q_max, heads, per_token=per_token, tile_rows=tile)
        assert t.grid_x == t.group_tiles * (q_max if per_token else 1), seed
        for seq_len in {0, 1, q_max, int(rng.integers(0, q_max + 1))}:
            seen = np.zeros(seq_len * heads, dtype=int)
            for x in range(t.grid_x):
                r0, end = cta_rows(x, seq_len, heads, t.group_rows, t.group_tiles, t.tile_rows)
                if r0 < end:
                    assert end - r0 <= t.tile_rows, seed
                    seen[r0:end] += 1
                    if per_token:
                        assert r0 // heads == (end - 1) // heads, (seed, x)
            assert (seen == 1).all(), (seed, q_max, heads, tile, seq_len)


def test_variants_render_only_what_they_use():
    bf16 = render(DecodeKey())
    for absent in ("e4m3x2_to_f16x2", "bf16x8_to_f16x8", "dequantize_stage", "group_scale",
                   "q_chunk_f16"):
        assert absent not in bf16, absent
    ds_sparse = render(DecodeKey(layout="fp8_ds_mla", mask="null", sparsity="sparse"))
    for present in ("e4m3x8_to_f16x8", "dequantize_stage", "group_scale"):
        assert present in ds_sparse, present
    assert "group_scale" not in render(DecodeKey(layout="fp8_rope_aware"))


def test_package_data_ships_every_template():
    """pyproject's package data globs (an installed wheel's kernels/) match
    every template, subfolders included, so the families render when installed."""
    cfg = tomllib.loads((REPO / "pyproject.toml").read_text())["tool"]["setuptools"]
    globs = cfg["package-data"]["mla_cupy.kernels"]
    assert cfg["package-dir"]["mla_cupy.kernels"] == "kernels"
    templates = set(kernels_dir().rglob("*.j2"))
    shipped = {p for g in globs for p in kernels_dir().glob(g)}   # setuptools' glob semantics
    assert len(templates) >= 5 and templates == shipped, sorted(map(str, templates - shipped))
