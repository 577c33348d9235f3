"""The Hopper TMA loader's host side, on the CPU: which page sizes get a tensor
map, what the driver is asked to encode, and that a plan's kv_map follows the
cache's address (a stand-in encoder, testing.fake_tensor_map_encode, writes the
encode arguments into the map's words).  The kernel side runs on the H200
(tests/test_gpu_dense.py covers pages 1, 16, 64 and 128: the ring's cp.async, the
seesaw's and narrow kernel's TMA)."""
from __future__ import annotations

import array

import numpy as np
import pytest

from mla_cupy import PagedKVCollection, ScalarArgs, abi, generic_flare_mla_decode_kv_cache_ragged
from mla_cupy.tensor_map import NO_MAP, box_rows, kv_map_arguments, raw_box_rows
from mla_cupy.testing import FakeCudaArray as F
from mla_cupy.testing import stub_device

B, H, T = 2, 16, 2


@pytest.mark.parametrize("page_size, rows, rows64", [(1, 0, 0), (3, 0, 0), (4, 0, 0), (8, 8, 8), (16, 16, 16),
                                                     (24, 0, 0), (32, 32, 32), (48, 0, 0), (64, 32, 64),
                                                     (96, 32, 32), (128, 32, 64), (256, 32, 64)])
def test_box_rows(page_size, rows, rows64):
    """A tile must be whole boxes of one page, each a multiple of 8 rows; boxes of
    up to 64 keys (the seesaw's, its whole tile) are 64 rows where the page holds
    whole 64-key runs, else 32-row boxes (a 96-key page: a tile may straddle two
    pages)."""
    assert box_rows(page_size) == rows
    assert box_rows(page_size, 64) == rows64


def test_kv_map_arguments():
    a = kv_map_arguments(4096, "bf16", num_blocks=7, num_layers=3, page_size=64, d_qk=576)
    assert a["dims"] == (576, 64, 3, 7)                        # innermost first
    assert a["strides"] == (1152, 64 * 1152, 3 * 64 * 1152)    # bytes, of dims 1..3
    assert a["box"] == (64, 32, 1, 1) and a["swizzle"] == 3 and a["data_type"] == 9
    assert kv_map_arguments(4096, "bf16", 7, 3, 64, 576, box_keys=64)["box"] == (64, 64, 1, 1)
    a = kv_map_arguments(4096, "fp16", num_blocks=2, num_layers=1, page_size=16, d_qk=512)
    assert a["dims"] == (512, 16, 1, 2) and a["strides"][0] == 1024 and a["box"][1] == 16
    assert a["data_type"] == 6
    with pytest.raises(ValueError, match="page_size"):
        kv_map_arguments(4096, "bf16", 7, 1, 48, 576)
    with pytest.raises(ValueError, match="16-byte aligned"):
        kv_map_arguments(4104, "bf16", 7, 1, 64, 576)


@pytest.mark.parametrize("page_size, rows", [(1, 0), (3, 0), (8, 0), (16, 16), (32, 32), (48, 0), (64, 64),
                                             (96, 0), (128, 64)])
def test_raw_box_rows(page_size, rows):
    """Dense `fp8` rows (render.narrow_tma_raw): a 64-key tile of whole boxes of one page,
    at least 16 rows a box (at most 16 boxes a tile; whole 8-row swizzle atoms)."""
    assert raw_box_rows(page_size, 64) == rows


def test_fp8_kv_map_arguments():
    """Bytes, 128-byte column boxes, 128-byte swizzled (the last box of a row half past it)."""
    a = kv_map_arguments(4096, "fp8", num_blocks=7, num_layers=3, page_size=64, d_qk=576, box_keys=64)
    assert a["dims"] == (576, 64, 3, 7) and a["strides"] == (576, 64 * 576, 3 * 64 * 576)
    assert a["box"] == (128, 64, 1, 1) and a["swizzle"] == 3 and a["data_type"] == 0
    assert kv_map_arguments(4096, "fp8", 7, 3, 16, 576, box_keys=64)["box"] == (128, 16, 1, 1)
    with pytest.raises(ValueError, match="page_size.*got 3"):
        kv_map_arguments(4096, "fp8", 7, 1, 3, 576, box_keys=64)
    with pytest.raises(ValueError, match="d_qk"):
        kv_map_arguments(4096, "fp8", 7, 1, 64, 520, box_keys=64)


@pytest.mark.parametrize("page_size, suffix, want_rows", [(64, "_m16_hopper_narrow", 64), (16, "_m16_hopper_narrow", 16),
                                                          (3, "_hopper", 0)])
def test_fp8_rows_take_the_narrow_kernel_where_a_box_fits(monkeypatch, page_size, suffix, want_rows):
    """Dense `fp8` caches: the narrow kernel copies their tiles by TMA boxes (its map and box
    rows passed), so a page size no box fits runs the ring, without a map."""
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    with stub_device() as launches:
        blocks, rows, words = _call(launches, page_size, blocks=F((5, 2, page_size, 576), np.uint8), num_heads=16)
        assert launches[-2].kernel_name.startswith("mla_decode_fp8_")
        assert launches[-2].kernel_name.endswith(suffix) and rows == want_rows
        assert (words[0] == blocks.address) == bool(want_rows)


def _call(launches, page_size, blocks=None, num_heads=H, scalar_args=None, **kw):
    blocks = blocks if blocks is not None else F((5, 2, page_size, 576), "bfloat16")
    kv = PagedKVCollection(blocks, F((B, 4), np.int32), F((B,), np.int32), page_size,
                           max_cache_length=200)
    generic_flare_mla_decode_kv_cache_ragged(
        q=F((T, num_heads, 576), "bfloat16"), input_row_offsets=F((B + 1,), np.int32), kv_collection=kv,
        layer_idx=1, scale=0.1, output=F((T, num_heads, 512), "bfloat16"),
        scalar_args_buf=scalar_args or ScalarArgs(F((3,), np.int64), B, 1, 2), **kw)
    decode = launches[-2]
    rows = decode.slots[abi.DECODE.slot("kv_box_rows")]
    at = abi.DECODE.slot("kv_map")
    words = list(decode.slots[at:at + 16])
    return blocks, rows, words


def test_plan_passes_the_map_of_its_cache():
    with stub_device() as launches:
        blocks, rows, words = _call(launches, 64)
        assert launches[-2].kernel_name.endswith("_hopper_narrow")
        assert rows == 32   # the narrow kernel's boxes: two a 64-key chunk (render.TMA_BOX_KEYS)
        # address, bf16, rank 4, dims, strides, box, 128-byte swizzle
        assert words[:15] == [blocks.address, 9, 4, 576, 64, 2, 5, 1152, 64 * 1152, 2 * 64 * 1152,
                              64, 32, 1, 1, 3]
        # the memoised entry with another cache array of the same shape: its own map
        other, rows2, words2 = _call(launches, 64, blocks=F((5, 2, 64, 576), "bfloat16"))
        assert other.address != blocks.address and rows2 == 32 and words2[0] == other.address
        # and back: the first cache's map again (memoised encoding)
        _, _, words3 = _call(launches, 64, blocks=blocks)
        assert words3 == words


@pytest.mark.parametrize("page_size, backend, want_rows", [(16, None, 16), (1, None, 0), (48, None, 0),
                                                           (64, "portable", 0)])
def test_no_map_where_the_kernel_cannot_use_it(page_size, backend, want_rows):
    """Pages that fit no box and kernels that load by cp.async get kv_box_rows 0
    and a zero map."""
    with stub_device() as launches:
        _, rows, words = _call(launches, page_size, backend=backend)
        assert rows == want_rows
        if want_rows == 0:
            assert array.array("Q", words).tobytes() == NO_MAP


@pytest.mark.parametrize("loads", [None, "cp_async"])
def test_the_ring_takes_no_map(monkeypatch, loads):
    """The ring's producer warpgroup loads by cp.async; MLA_CUPY_HOPPER_LOADS may say so."""
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "ring")
    if loads:
        monkeypatch.setenv("MLA_CUPY_HOPPER_LOADS", loads)
    with stub_device() as launches:
        _, rows, words = _call(launches, 64)
        assert rows == 0 and not any(words)


@pytest.mark.parametrize("schedule", ["seesaw", "auto"])
@pytest.mark.parametrize("page_size, want_rows", [(16, 16), (32, 32), (64, 64), (128, 64)])
def test_the_seesaw_always_gets_a_map(monkeypatch, schedule, page_size, want_rows):
    """The seesaw loads by TMA only; "auto" takes it for more than 64 rows (here 128
    heads x 1 token)."""
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", schedule)
    with stub_device() as launches:
        blocks, rows, words = _call(launches, page_size, num_heads=128)
        # (or its clustered twin at h128 where splits are long: compiler.takes_multicast)
        assert launches[-2].kernel_name.removesuffix("_multicast").endswith("_hopper_seesaw")
        assert rows == want_rows and words[0] == blocks.address


@pytest.mark.parametrize("num_heads, page_size", [(48, 64), (64, 64), (128, 1), (128, 48), (16, 3), (32, 3)])
def test_auto_keeps_the_ring_where_the_seesaw_does_not_pay_or_cannot_load(monkeypatch, num_heads,
                                                                           page_size):
    """33 to 64 rows: the ring (bound by loads); pages TMA cannot load: the ring with
    cp.async (32 rows or fewer on them too: the narrow kernel loads 16-bit rows by TMA only)."""
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    with stub_device() as launches:
        _, rows, words = _call(launches, page_size, num_heads=num_heads)
        assert launches[-2].kernel_name.endswith("_hopper") and rows == 0 and not any(words)


@pytest.mark.parametrize("page_size", [1, 3, 48])
def test_the_seesaw_refuses_pages_tma_cannot_load(monkeypatch, page_size):
    """An error naming the page size, before anything is launched."""
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "seesaw")
    with stub_device() as launches, pytest.raises(ValueError, match=f"page_size.*got {page_size}"):
        _call(launches, page_size)
    assert not launches


def test_the_seesaw_refuses_an_unaligned_cache(monkeypatch):
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "seesaw")
    blocks = F((5, 2, 64, 576), "bfloat16")
    address = blocks.address + 8 if blocks.address % 16 == 0 else blocks.address
    blocks.__cuda_array_interface__ = dict(blocks.__cuda_array_interface__, data=(address, False))
    with stub_device() as launches, pytest.raises(ValueError, match="16-byte aligned"):
        _call(launches, 64, blocks=blocks)
    assert not launches


@pytest.mark.parametrize("page_size, want_rows", [(16, 16), (64, 32)])
def test_auto_takes_the_narrow_kernel_for_16_rows_with_a_map(monkeypatch, page_size, want_rows):
    """16 rows or fewer on pages TMA can load: the narrow kernel, which needs the map."""
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    with stub_device() as launches:
        blocks, rows, words = _call(launches, page_size, num_heads=16)
        assert launches[-2].kernel_name.endswith("_m16_hopper_narrow")
        assert rows == want_rows and words[0] == blocks.address


@pytest.mark.parametrize("loads, why", [("tma", "TMA loads were removed"), ("bulk", "got 'bulk'")])
def test_a_loads_choice_the_ring_does_not_have_is_an_error(monkeypatch, loads, why):
    """Not ignored: "tma" (the ring's former opt-in TMA loads) or anything else but
    cp_async is refused before anything is launched."""
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "ring")
    monkeypatch.setenv("MLA_CUPY_HOPPER_LOADS", loads)
    with stub_device() as launches, pytest.raises(ValueError, match=f"MLA_CUPY_HOPPER_LOADS.*{why}"):
        _call(launches, 64)
    assert not launches


def test_encode_through_the_driver_binding(monkeypatch):
    """encode_kv_map's real path (mla_cupy.driver.bind) against a stand-in
    library running testing.fake_tensor_map_encode: the 128 bytes it returns
    are what the driver wrote, memoised per address; a non-zero CUresult raises."""
    import ctypes

    from mla_cupy import driver, tensor_map
    from mla_cupy.testing import fake_tensor_map_encode

    class Function:
        status = 0

        def __call__(self, *args):
            out = args[0]
            fake_tensor_map_encode(out, *args[1:])
            return self.status

    class Library:
        cuTensorMapEncodeTiled = Function()

    lib = Library()
    monkeypatch.setattr(driver, "library", lambda: lib)
    monkeypatch.setattr(tensor_map, "_encoded", {})
    opaque = tensor_map.encode_kv_map(4096, "bf16", 7, 3, 64, 576)
    words = np.frombuffer(opaque, np.uint64).tolist()
    assert words[:15] == [4096, 9, 4, 576, 64, 3, 7, 1152, 64 * 1152, 3 * 64 * 1152, 64, 32, 1, 1, 3]
    assert lib.cuTensorMapEncodeTiled.argtypes[0] is ctypes.c_void_p
    lib.cuTensorMapEncodeTiled.status = 1
    assert tensor_map.encode_kv_map(4096, "bf16", 7, 3, 64, 576) == opaque   # memoised: no call
    with pytest.raises(RuntimeError, match="cuTensorMapEncodeTiled failed with CUresult 1"):
        tensor_map.encode_kv_map(8192, "bf16", 7, 3, 64, 576)


@pytest.mark.parametrize("batch_invariant, want", [(False, "_hopper_seesaw"), (True, "_hopper")])
def test_batch_invariant_schedule_ignores_q_max_seq_len(monkeypatch, batch_invariant, want):
    """64 heads x 2 tokens span two 64-row tiles, so "auto" takes the seesaw;
    with batch_invariant only one token's 64 heads count (a sequence alone,
    with one token, must get the same kernel)."""
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    sa = ScalarArgs(F((3,), np.int64), B, 2, 2, batch_invariant=batch_invariant,
                    split_len=1024 if batch_invariant else 0)
    with stub_device() as launches:
        _call(launches, 64, num_heads=64, scalar_args=sa, batch_invariant=batch_invariant)
        assert launches[-2].kernel_name.endswith(want)   # "_hopper_seesaw" does not end with "_hopper"


@pytest.mark.parametrize("num_heads, q_max, batch_invariant, backend, want", [
    (16, 1, False, None, "_hopper_narrow"),     # 16 rows: the narrow Hopper kernel
    (24, 1, False, None, "_hopper_narrow"),     # 17-32 rows: its 32-row tile (h24 310 us, portable 625)
    (16, 2, False, None, "_hopper_narrow"),     # two tokens' 16 heads: a 32-row group
    (24, 4, True, None, "_hopper_narrow"),      # batch_invariant: one token's rows decide, whatever the batch
    (32, 1, True, None, "_hopper_narrow"),
    (128, 1, False, None, "_hopper"),           # the ring
    (24, 1, False, "portable", ""),             # a forced family is taken as asked
    (16, 1, False, "hopper", "_hopper_narrow"),
])
def test_dense_fp8_family_by_rows(monkeypatch, num_heads, q_max, batch_invariant, backend, want):
    """Dense fp8 rows with bf16 queries run the Hopper kernels at every row count (a
    producer dequantises them): the narrow kernel up to 32 rows, the ring above; the
    portable kernels only when asked for."""
    monkeypatch.delenv("MLA_CUPY_BACKEND", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    sa = ScalarArgs(F((3,), np.int64), B, q_max, 2, batch_invariant=batch_invariant,
                    split_len=1024 if batch_invariant else 0)
    with stub_device() as launches:
        _call(launches, 64, blocks=F((5, 2, 64, 576), np.uint8), num_heads=num_heads, scalar_args=sa,
              batch_invariant=batch_invariant, backend=backend)
        name = launches[-2].kernel_name
        assert name.startswith("mla_decode_fp8_causal_dense"), name
        assert (name.endswith(want) if want else "_hopper" not in name), name
