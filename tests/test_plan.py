"""DecodePlan and the entry points' memoised plans, on the CPU (docs/spec.md §12).

``testing.stub_device`` answers the device queries, hands out stand-in kernels
and records every launch with the parameter slots as cuLaunchKernel would read
them, so these tests check what would be launched: which addresses land in
which parameter, when a call re-plans, and that a bad per-call array raises
before anything is launched.
"""
from __future__ import annotations

import os
import subprocess
import sys

import numpy as np
import pytest

from mla_cupy import (PagedKVCollection, ScalarArgs, abi, dispatch, generic_flare_mla_decode_kv_cache_ragged,
                      mla_decode, plan_decode)
from mla_cupy.testing import FakeCudaArray, stub_device
from mla_cupy.render import COMBINE_WARP_ROWS

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
B, H, T, PAGE = 3, 16, 4, 64
F = FakeCudaArray


@pytest.fixture
def launches():
    with stub_device() as recorded:
        yield recorded


def dense_args(num_partitions=4, batch_size=B, **kw):
    kv = PagedKVCollection(F((12, PAGE, 576), "bfloat16"), F((B, 5), np.int32), F((B,), np.int32),
                           PAGE, max_cache_length=300)
    args = dict(q=F((T, H, 576), "bfloat16"), input_row_offsets=F((B + 1,), np.int32),
                kv_collection=kv, layer_idx=0, scale=0.05, output=F((T, H, 512), "bfloat16"),
                scalar_args_buf=ScalarArgs(F((3,), np.int64), batch_size, 2, num_partitions))
    args.update(kw)
    return args


def sparse_rope_aware_args():
    """Every array parameter in use: sparse, an extra stream, fp8_rope_aware
    scales (the extra stream's through extra_scales_ptr), q_scale, sink, lse."""
    kv = PagedKVCollection(F((6, 1, PAGE, 640), np.uint8), F((B, 1), np.int32), F((B,), np.int32),
                           PAGE, scales=F((6, 1, PAGE), np.float32), max_cache_length=100)
    extra = PagedKVCollection(F((5, 1, 2, 640), np.uint8), F((B, 1), np.int32), F((B,), np.int32), 2,
                              max_cache_length=0)
    return dense_args(
        kv_collection=kv, q=F((T, H, 640), np.uint8), per_token_scale_rope_aware=True,
        q_scale_ptr=F((T,), np.float32), sparse_mla=True, d_indices=F((T, 8), np.int32),
        topk_lengths=F((B,), np.int32), logical_indices=F((T, 8), np.int32), extra_k=extra,
        extra_d_indices=F((T, 4), np.int32), extra_topk_lengths=F((B,), np.int32),
        extra_scales_ptr=F((5, 1, 2), np.float32), attn_sink_ptr=F((H,), np.float32),
        lse=F((T, H), np.float32))


def expected_addresses(args) -> dict:
    """ABI name -> the address the kernels must get, from the arguments."""
    kv, extra = args["kv_collection"], args.get("extra_k")
    want = dict(q=args["q"], out=args["output"], lse=args.get("lse"),
                input_row_offsets=args["input_row_offsets"], blocks=kv.blocks,
                lookup_table=kv.lookup_table, cache_lengths=kv.cache_lengths,
                attn_sink=args.get("attn_sink_ptr"), scalar_args=args["scalar_args_buf"].buffer,
                q_scale=args.get("q_scale_ptr"), scales=kv.scales, d_indices=args.get("d_indices"),
                topk_lengths=args.get("topk_lengths"), logical_indices=args.get("logical_indices"),
                extra_blocks=extra.blocks if extra is not None else None,
                extra_d_indices=args.get("extra_d_indices"),
                extra_topk_lengths=args.get("extra_topk_lengths"),
                extra_scales=args.get("extra_scales_ptr"))
    return {k: 0 if v is None else v.address for k, v in want.items()}


def check_addresses(launch, kernel_abi, want: dict):
    for name, address in want.items():
        if name in kernel_abi.names:
            assert launch.slots[kernel_abi.index(name)] == address, name


def run_entry(args):
    generic_flare_mla_decode_kv_cache_ragged(**args)


@pytest.mark.parametrize("make", [dense_args, sparse_rope_aware_args], ids=["dense", "sparse_fp8"])
def test_every_address_reaches_its_parameter(launches, make):
    """The entry's first call (full path), its second (memoised plan) and a
    plan's run launch the same kernels with the same grids, each array's
    address in its own parameter; only the workspace differs (the plan owns one)."""
    args = make()
    want = expected_addresses(args)
    run_entry(args)
    run_entry(args)
    plan = plan_decode(**args)
    plan.run(args["q"], args["output"], args.get("lse"))
    assert len(launches) == 6 and plan.num_partitions == 4
    first, memo, own = launches[0:2], launches[2:4], launches[4:6]
    for decode, combine in (first, memo, own):
        check_addresses(decode, abi.DECODE, want)
        check_addresses(combine, abi.COMBINE, want)
        # P = 4: one group a row, so warp rows (render.combine_shape)
        assert decode.grid[1:] == (4, B) and combine.grid == (-(-H // COMBINE_WARP_ROWS), T, 1)
        assert combine.block == (32, COMBINE_WARP_ROWS, 1) and combine.kernel_name == "mla_combine_bf16_warp_rows"
        work = decode.slots[abi.DECODE.index("o_part")]
        assert work != 0 and combine.slots[abi.COMBINE.index("o_part")] == work
    assert first == memo
    for a, b in zip(first, own):
        assert (a.func_ptr, a.grid, a.block, a.smem) == (b.func_ptr, b.grid, b.block, b.smem)
        names = (abi.DECODE if a is first[0] else abi.COMBINE).names
        differ = {n for n, x, y in zip(names, a.slots, b.slots) if x != y}
        assert differ == {"o_part", "lse_part"}, differ
    assert plan.workspace[0].address == own[0].slots[abi.DECODE.index("o_part")]


def test_memoised_plan_takes_new_addresses_and_replans_on_change(launches, monkeypatch):
    built = []
    real = dispatch._build_plan
    monkeypatch.setattr(dispatch, "_build_plan", lambda *a, **k: built.append(1) or real(*a, **k))
    args = dense_args()
    run_entry(args)
    run_entry(args | dict(output=F((T, H, 512), "bfloat16"), q=F((T, H, 576), "bfloat16")))
    assert len(built) == 1, "same signatures, new arrays: the plan is reused"
    assert launches[2].slots[abi.DECODE.index("out")] != launches[0].slots[abi.DECODE.index("out")]
    # anything validation or planning reads is part of the key
    changes = [dict(q=F((T + 1, H, 576), "bfloat16"), output=F((T + 1, H, 512), "bfloat16")),
               dict(scalar_args_buf=ScalarArgs(F((3,), np.int64), 2, 2, 4)),
               dict(scalar_args_buf=ScalarArgs(F((3,), np.int64), B, 2, 1)),
               dict(mask_str="null"), dict(scale=0.25), dict(lse=F((T, H), np.float32)),
               dict(attn_sink_ptr=F((H,), np.float32)), dict(num_partitions_in=2), dict(stream=7)]
    for n, change in enumerate(changes, start=2):
        run_entry(args | change)
        assert len(built) == n, change
    assert launches[-2].stream == 7
    grids = {launch.grid for launch in launches if launch.block[0] != 128}
    assert (1, 4, 2) in grids and (1, 1, B) in grids and (1, 2, B) in grids
    monkeypatch.setenv("MLA_CUPY_BACKEND", "portable")
    run_entry(args)
    assert len(built) == len(changes) + 2


def test_memo_key_tells_bool_from_int(launches):
    run_entry(dense_args(layer_idx=0))
    with pytest.raises(TypeError, match="^layer_idx: expected an int, got bool"):
        run_entry(dense_args(layer_idx=False))
    assert len(launches) == 2


def _mismatches():
    ok = dict(q=F((T, H, 576), "bfloat16"), output=F((T, H, 512), "bfloat16"), lse=None)
    return [
        ("q_dtype", ok | dict(q=F((T, H, 576), np.float16)), TypeError, "q", "bfloat16", "float16"),
        ("q_shape", ok | dict(q=F((T + 1, H, 576), "bfloat16")), ValueError, "q", "[4, 16, 576]",
         "[5, 16, 576]"),
        ("q_host", ok | dict(q=np.zeros((T, H, 576), np.float32)), TypeError, "q", "CUDA array",
         "ndarray"),
        ("q_none", ok | dict(q=None), TypeError, "q", "CUDA array", "None"),
        ("output_shape", ok | dict(output=F((T, H, 576), "bfloat16")), ValueError, "output",
         "[4, 16, 512]", "[4, 16, 576]"),
        ("output_dtype", ok | dict(output=F((T, H, 512), np.float16)), TypeError, "output",
         "bfloat16", "float16"),
        ("lse_dtype", ok | dict(lse=F((T, H), np.float16)), TypeError, "lse", "float32", "float16"),
        ("lse_shape", ok | dict(lse=F((T, H + 1), np.float32)), ValueError, "lse", "[4, 16]",
         "[4, 17]"),
    ]


@pytest.mark.parametrize("case_id,call,exc,name,expected,got", _mismatches(),
                         ids=[m[0] for m in _mismatches()])
def test_run_rejects_arrays_unlike_the_planned_ones(launches, case_id, call, exc, name, expected, got):
    plan = plan_decode(**dense_args())
    with pytest.raises(exc) as info:
        plan.run(call["q"], call["output"], call["lse"])
    msg = str(info.value)
    assert type(info.value) is exc and msg.startswith(f"{name}: "), msg
    assert expected in msg and got in msg, msg
    assert launches == [], "nothing may be launched (output untouched)"


def test_run_rejects_another_device_and_non_contiguous(launches):
    plan = plan_decode(**dense_args())
    q = F((T, H, 576), "bfloat16", device=1)
    with pytest.raises(ValueError, match="^q: expected an array on CUDA device 0 .*, got device 1"):
        plan.run(q, F((T, H, 512), "bfloat16"))
    strided = F((T, H, 512), "bfloat16")
    strided.flags = type("Flags", (), {"c_contiguous": False})()
    strided.strides = (1, 1, 1)
    with pytest.raises(ValueError, match="^output: expected a C-contiguous array"):
        plan.run(F((T, H, 576), "bfloat16"), strided)
    assert launches == []


@pytest.mark.parametrize("name", ["q", "output", "kv_collection.blocks"])
def test_an_address_off_16_bytes_is_an_error_before_any_launch(launches, name):
    """q, output and the caches' blocks move in 16-byte pieces: an array whose address
    lies off a 16-byte boundary (a view at an odd element offset) is refused, naming
    it, by the entry (planning or memoised) and by plan.run; the kernels would fault."""
    bad = dict(q=F((T, H, 576), "bfloat16", offset=2), output=F((T, H, 512), "bfloat16", offset=8))
    args = dense_args()
    if name == "kv_collection.blocks":
        args["kv_collection"] = PagedKVCollection(F((12, PAGE, 576), "bfloat16", offset=4), F((B, 5), np.int32),
                                                  F((B,), np.int32), PAGE, max_cache_length=300)
    else:
        args[name] = bad[name]
    message = f"^{name}: expected a 16-byte aligned address .*, got 0x[0-9a-f]+, [248] bytes past a boundary"
    with pytest.raises(ValueError, match=message):
        generic_flare_mla_decode_kv_cache_ragged(**args)
    assert launches == []
    aligned = dense_args()
    generic_flare_mla_decode_kv_cache_ragged(**aligned)            # memoised from here
    n = len(launches)
    assert n > 0
    if name != "kv_collection.blocks":
        with pytest.raises(ValueError, match=message):
            generic_flare_mla_decode_kv_cache_ragged(**dict(aligned, **{name: bad[name]}))
        plan = plan_decode(**aligned)
        with pytest.raises(ValueError, match=message):
            plan.run(bad.get("q") if name == "q" else aligned["q"],
                     bad.get("output") if name == "output" else aligned["output"])
    assert len(launches) == n
    generic_flare_mla_decode_kv_cache_ragged(**aligned)            # a refusal leaves nothing behind
    assert len(launches) == 2 * n


def test_run_takes_lse_the_plan_did_not_have_and_streams(launches):
    args = dense_args(num_partitions=1)
    plan = plan_decode(**args)
    lse = F((T, H), np.float32)
    plan.run(args["q"], args["output"], lse, stream=11)
    plan.run(args["q"], args["output"], stream=type("TorchLike", (), {"cuda_stream": 12})())
    plan.run(args["q"], args["output"], stream=type("CupyLike", (), {"ptr": 13})())
    assert [launch.stream for launch in launches] == [11, 12, 13]
    assert launches[0].slots[abi.DECODE.index("lse")] == lse.address
    assert launches[1].slots[abi.DECODE.index("lse")] == 0
    with pytest.raises(TypeError, match="^stream: expected a cupy/torch CUDA stream"):
        plan.run(args["q"], args["output"], stream="default")
    with pytest.raises(ValueError, match="^stream: expected a stream handle >= 0, got -1"):
        plan.run(args["q"], args["output"], stream=-1)
    assert len(launches) == 3


def test_plan_validates_like_the_entry(launches):
    for bad, exc, name in ((dict(layer_idx=1), ValueError, "layer_idx"),
                           (dict(scale=float("nan")), ValueError, "scale"),
                           (dict(output=F((T, H, 512), np.float16)), TypeError, "output"),
                           (dict(d_indices=F((T, 8), np.int32)), ValueError, "d_indices")):
        for fn in (plan_decode, generic_flare_mla_decode_kv_cache_ragged):
            with pytest.raises(exc, match=f"^{name}: "):
                fn(**dense_args(**bad))
    assert launches == []


def test_empty_batch_plan_checks_and_launches_nothing(launches):
    args = dense_args(scalar_args_buf=ScalarArgs(F((3,), np.int64), 0, 2, 4))
    plan = plan_decode(**args)
    assert plan.noop
    plan.run(args["q"], args["output"])
    run_entry(args)
    run_entry(args)
    with pytest.raises(ValueError, match="^q: "):
        plan.run(F((T + 1, H, 576), "bfloat16"), args["output"])
    assert launches == []


def test_mla_decode_reuses_its_scalar_buffer(launches):
    import mla_cupy.scalar_args as sa_module
    kv = dense_args()["kv_collection"]
    q, offsets = F((T, H, 576), "bfloat16"), F((B + 1,), np.int32)
    out = mla_decode(q, kv, offsets, q_max_seq_len=2)
    out2 = mla_decode(q, kv, offsets, q_max_seq_len=2)
    assert out.shape == (T, H, 512) and out.address != out2.address
    sa_slot = abi.DECODE.index("scalar_args")
    decodes = [launch for launch in launches if len(launch.slots) == abi.DECODE.num_slots]
    assert len(decodes) == 2 and decodes[0].slots[sa_slot] == decodes[1].slots[sa_slot] != 0
    assert len(sa_module._shared) == 1
    mla_decode(q, kv, offsets, q_max_seq_len=1)
    assert len(sa_module._shared) == 2
    with pytest.raises(ValueError, match="q_max_seq_len"):
        mla_decode(q, kv, offsets, q_max_seq_len=True)


def test_a_given_split_and_a_chosen_one_never_share_a_scalar_buffer(launches, monkeypatch):
    """mla_decode memoises its ScalarArgs by value; a P the caller gave and the same
    P chosen by the dispatcher are different buffers (split_chosen), so a call that
    left P free takes segment mode even after one that pinned it (the H200 run
    found test_segment_mode on the splits after another test pinned the same P),
    and a pinned P is never overridden by segment mode."""
    import mla_cupy.scalar_args as sa_module
    monkeypatch.setattr(sa_module, "_shared", {})
    monkeypatch.setattr(sa_module, "_partitions", {})
    kw = dict(layout="bf16", backend=None)
    chosen = sa_module.shared_scalar_args(B, 1, 200, 16, **kw)
    given = sa_module.shared_scalar_args(B, 1, 200, 16, num_partitions=chosen.num_partitions, **kw)
    assert chosen.split_chosen and not given.split_chosen and given is not chosen
    assert given.num_partitions == chosen.num_partitions
    assert sa_module.shared_scalar_args(B, 1, 200, 16, **kw) is chosen
    assert sa_module.shared_scalar_args(B, 1, 200, 16, num_partitions=chosen.num_partitions, **kw) is given


def test_import_does_not_import_torch():
    code = ("import sys, mla_cupy; mla_cupy.plan_decode; mla_cupy.DecodePlan; "
            "raise SystemExit(3 if 'torch' in sys.modules else 0)")
    r = subprocess.run([sys.executable, "-c", code], cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO),
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr)


def test_checked_mode_checks_before_every_launch_and_is_never_memoised(launches, monkeypatch):
    """validate="full": the device check runs before each launch (entry point and
    plan.run), a failing check launches nothing, and the default path never
    runs it."""
    from mla_cupy import checked
    seen = []

    def check(arrays, kv, sparse, *, stream, **facts):
        seen.append(facts["num_tokens"])
        if len(seen) == 3:
            raise ValueError("kv_collection.cache_lengths: sequence 0: expected ..., got -1")

    monkeypatch.setattr(checked, "check_on_device", check)
    monkeypatch.setattr(dispatch, "to_cupy", lambda x, name: x)         # no device behind the stand-ins
    monkeypatch.setattr(dispatch, "external_stream", lambda handle: handle)
    args = dense_args()
    generic_flare_mla_decode_kv_cache_ragged(**args, validate="full")
    generic_flare_mla_decode_kv_cache_ragged(**args, validate="full")
    assert seen == [T, T] and len(launches) == 2 * 2          # decode + combine, twice
    with pytest.raises(ValueError, match="^kv_collection.cache_lengths"):
        generic_flare_mla_decode_kv_cache_ragged(**args, validate="full")
    assert len(launches) == 4                                  # nothing launched
    generic_flare_mla_decode_kv_cache_ragged(**args)           # default: no device check
    plan = plan_decode(**args)
    plan.run(args["q"], args["output"])
    assert len(seen) == 3 and len(launches) == 8
    checked_plan = plan_decode(**args, validate="full")
    checked_plan.run(args["q"], args["output"])
    assert len(seen) == 4 and len(launches) == 10


@pytest.mark.parametrize("hopper, launch_mode, want", [(True, None, True), (False, None, False),
                                                       (True, "cupy", False)])
def test_combine_is_a_programmatic_dependent_on_sm90(monkeypatch, hopper, launch_mode, want):
    """On sm_90 the combine is launched with PDL (cuLaunchKernelEx) behind the
    decode; never before sm_90, nor through CuPy's launch (no attributes); the
    decode itself is an ordinary launch."""
    if launch_mode:
        monkeypatch.setenv("MLA_CUPY_LAUNCH", launch_mode)
    with stub_device(hopper=hopper) as launches:
        run_entry(dense_args(num_partitions=4))
        plan = plan_decode(**dense_args(num_partitions=4))
        plan.run(dense_args()["q"], dense_args()["output"])
    assert len(launches) == 4
    for decode, combine in (launches[0:2], launches[2:4]):
        assert not decode.programmatic and combine.programmatic is want


def test_programmatic_launch_config(monkeypatch):
    """What cuLaunchKernelEx is given: grid, block, shared memory, the call's
    stream and one attribute, programmatic stream serialization = 1."""
    from mla_cupy import driver
    from mla_cupy import plan as plan_mod
    seen = []

    def fake_launch_ex(config, func, params, extra):
        c = driver.LaunchConfig.from_address(config)
        attr = c.attrs[0]
        seen.append(((c.gridDimX, c.gridDimY, c.gridDimZ), (c.blockDimX, c.blockDimY, c.blockDimZ),
                     c.sharedMemBytes, c.hStream, c.numAttrs, attr.id,
                     int.from_bytes(bytes(attr.value)[:4], "little"), func, params, extra))

    launch = plan_mod.KernelLaunch(abi.COMBINE, None, 0x1234, (16, 4), (128,), 0,
                                   dict(o_part=8, lse_part=16, attn_sink=None, input_row_offsets=24,
                                        scalar_args=32, out=40, lse=None, num_heads=16, num_tokens=4,
                                        num_partitions_in=3, seg_info=None, segment_rows=0), "driver",
                          programmatic=True)
    monkeypatch.setattr(plan_mod, "_launch_kernel_ex", fake_launch_ex)
    launch.launch(0xabc)
    launch.launch(0)
    assert seen[0][:7] == ((16, 4, 1), (128, 1, 1), 0, 0xabc, 1, driver.PROGRAMMATIC_STREAM_SERIALIZATION, 1)
    assert seen[0][7:] == (0x1234, launch.params_address, 0)
    assert seen[1][3] is None   # the default stream


def test_driver_binding_of_the_programmatic_launch(monkeypatch):
    """The real cuLaunchKernelEx path (mla_cupy.driver.bind / check) against a
    stand-in driver library: the function is bound once with four pointer
    arguments, gets the config, function, parameter and extra pointers, and a
    non-zero CUresult raises."""
    import ctypes

    from mla_cupy import driver
    from mla_cupy import plan as plan_mod

    class Function:
        status = 0

        def __init__(self):
            self.calls = []

        def __call__(self, *args):
            self.calls.append(args)
            return self.status

    class Library:
        cuLaunchKernelEx = Function()

    lib = Library()
    monkeypatch.setattr(driver, "library", lambda: lib)
    monkeypatch.setattr(plan_mod, "_launch_kernel_ex", plan_mod._driver_launch_ex)
    launch = plan_mod.KernelLaunch(abi.COMBINE, None, 0x1234, (16, 4), (128,), 0,
                                   dict(o_part=8, lse_part=16, attn_sink=None, input_row_offsets=24,
                                        scalar_args=32, out=40, lse=None, num_heads=16, num_tokens=4,
                                        num_partitions_in=3, seg_info=None, segment_rows=0), "driver",
                          programmatic=True)
    launch.launch(0xabc)
    launch.launch(0xabc)
    f = lib.cuLaunchKernelEx
    assert f.argtypes == [ctypes.c_void_p] * 4 and f.restype is ctypes.c_int
    assert f.calls == [(launch._config_address, 0x1234, launch.params_address, 0)] * 2
    f.status = 700
    with pytest.raises(RuntimeError, match="cuLaunchKernelEx failed with CUresult 700"):
        launch.launch(0xabc)


@pytest.mark.parametrize("num_heads", [16, 32])
@pytest.mark.parametrize("q_scaled", [False, True], ids=["no_q_scale", "q_scale"])
def test_fp8_calls_of_32_rows_run_the_narrow_kernel_with_or_without_a_query_scale(num_heads, q_scaled):
    """`fp8` rows with bf16 queries, with or without a per-token sigma_Q (q_scale_ptr,
    which the narrow kernel applies to the row's scores as the ring does): 16 and 32
    rows run the narrow kernel, and the launch passes q_scale's address."""
    kv = PagedKVCollection(F((12, PAGE, 576), np.uint8), F((B, 5), np.int32), F((B,), np.int32),
                           PAGE, max_cache_length=300)
    args = dense_args(kv_collection=kv, q=F((T, num_heads, 576), "bfloat16"),
                      output=F((T, num_heads, 512), "bfloat16"),
                      scalar_args_buf=ScalarArgs(F((3,), np.int64), B, 1, 1))
    if q_scaled:
        args["q_scale_ptr"] = F((T,), np.float32)
    with stub_device() as launches:
        run_entry(args)
        plan = plan_decode(**args)
    names = [launch.kernel_name for launch in launches] + [plan.variant]
    assert names and all(n.startswith("mla_decode_fp8_") for n in names), names
    assert all(n.endswith(f"_m{num_heads}_hopper_narrow") for n in names), names
    check_addresses(launches[0], abi.DECODE, dict(q_scale=args["q_scale_ptr"].address if q_scaled else 0))


@pytest.mark.parametrize("layout, row_bytes", [("fp8_ds_mla", 656), ("fp8", 576)])
@pytest.mark.parametrize("topk, num_partitions, schedule", [
    (2048, 1, "_hopper_narrow"), (4096, 2, "_hopper_narrow"), (2048, 2, "_hopper"), (2048, 4, "_hopper")])
def test_sparse_calls_of_16_rows_take_the_narrow_kernel_on_long_splits(layout, row_bytes, topk, num_partitions,
                                                                       schedule):
    """Sparse fp8 records at 16 heads run the narrow kernel when a split holds
    compiler.NARROW_SPARSE_MIN_SPLIT_KEYS keys or more (indices_stride / num_partitions),
    the ring (no schedule suffix) on shorter splits."""
    kv = PagedKVCollection(F((12, PAGE, row_bytes), np.uint8), F((B, 5), np.int32), F((B,), np.int32),
                           PAGE, max_cache_length=300)
    args = dense_args(num_partitions=num_partitions, kv_collection=kv, q=F((T, 16, 576), "bfloat16"),
                      output=F((T, 16, 512), "bfloat16"), sparse_mla=True,
                      d_indices=F((T, topk), np.int32), attn_sink_ptr=F((16,), np.float32))
    with stub_device() as launches:
        run_entry(args)
        plan = plan_decode(**args)
    names = [launch.kernel_name for launch in launches if launch.kernel_name.startswith("mla_decode")]
    names.append(plan.variant)
    assert all(n.startswith(f"mla_decode_{layout}_") and n.endswith(schedule) for n in names), names


@pytest.mark.parametrize("forced,backend,suffix", [
    (None, None, "_hopper"),                       # auto: the ring's padded 64-row tile (session 32)
    ("narrow", None, "_m32_hopper_narrow"),        # the 32-row narrow tile, forced
    ("narrow", "portable", ""),                    # a forced schedule never overrides the backend
])
def test_dense_16_bit_calls_of_32_rows_run_the_ring_unless_narrow_is_forced(launches, monkeypatch, forced,
                                                                            backend, suffix):
    """DeepSeek h32 (32 rows of a token over a bf16 cache): auto plans the ring kernel, a
    forced narrow schedule its 32-row tile, and MLA_CUPY_BACKEND=portable the portable
    kernel whatever the schedule (compiler.narrow_auto_rows, docs/spec.md §12)."""
    for name, value in (("MLA_CUPY_HOPPER_SCHEDULE", forced), ("MLA_CUPY_BACKEND", backend)):
        if value is None:
            monkeypatch.delenv(name, raising=False)
        else:
            monkeypatch.setenv(name, value)
    args = dense_args(q=F((T, 32, 576), "bfloat16"), output=F((T, 32, 512), "bfloat16"))
    args["scalar_args_buf"] = ScalarArgs(F((3,), np.int64), B, 1, 4)   # one token a sequence: 32 rows
    plan = plan_decode(**args)
    assert plan.variant.endswith(suffix), plan.variant
    if backend == "portable":
        assert "_hopper" not in plan.variant, plan.variant


@pytest.mark.parametrize("split,mask,batch", [("auto", "causal", B), ("auto", "null", B), ("auto", "causal", 1),
                                              ("segments", "causal", 1), ("auto", "sliding_window_causal", B),
                                              ("partitions", "causal", B)])
def test_the_dense_ring_takes_segment_mode_for_batches(launches, monkeypatch, split, mask, batch):
    """DeepSeek h64 over a bf16 cache (the ring): auto plans segment mode for a batch of
    two or more sequences, one share of the batch's keys a CTA (grid (1, SMs, 1)) with
    seg_info for the combine, and the splits for one sequence (MLA_CUPY_SPLIT=segments
    takes segment mode there too) or under a window (render.ring_segments: balanced
    splits do not apply to windows either); partitions the host's P splits
    (docs/spec.md §7)."""
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    monkeypatch.delenv("MLA_CUPY_BACKEND", raising=False)
    monkeypatch.setenv("MLA_CUPY_SPLIT", split)
    args = dense_args(q=F((T, 64, 576), "bfloat16"), output=F((T, 64, 512), "bfloat16"), mask_str=mask)
    if mask == "sliding_window_causal":
        args["local_window_size"] = 100
    args["scalar_args_buf"] = ScalarArgs(F((3,), np.int64), batch, 1, 2, split_chosen=True)
    plan = plan_decode(**args)
    assert plan.variant.endswith("_hopper") and f"_{mask}_" in plan.variant, plan.variant
    sms = dispatch.sm_count_of_current_device()
    segments = split != "partitions" and mask != "sliding_window_causal" and (batch >= 2 or split == "segments")
    assert (plan.grid == (1, sms, 1)) == segments, plan.grid
    if not segments:
        assert plan.grid[0] == 1 and plan.grid[1] in (2, 2 * dispatch.BALANCED_GRID_FACTOR) \
            and plan.grid[2] == batch, plan.grid
