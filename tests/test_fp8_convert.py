"""The e4m3 -> fp16 conversion of kernels/common/fp8.cuh.j2 (CPU only).

sm_80 has no e4m3 instructions, so the kernels decode in software; this test
replays those bit steps in NumPy for all 256 codes against ml_dtypes, and
checks that sm_89+ still compiles the hardware cvt."""
from __future__ import annotations

import ml_dtypes
import numpy as np
import pytest

from mla_cupy.variants import DecodeKey

CODES = np.arange(256, dtype=np.uint32)


def software_e4m3x2_to_f16x2(two: np.ndarray) -> np.ndarray:
    """The template's #else branch, step by step, on u32 lanes (two codes each)."""
    bits = (((two & 0x7F) << 7) | ((two & 0x80) << 8)
            | ((two & 0x7F00) << 15) | ((two & 0x8000) << 16)).astype(np.uint32)
    halves = bits.view(np.uint16).reshape(-1, 2).view(np.float16)   # little-endian: [lo, hi]
    # mul.rn.f16x2 by 0x5c00 (= 256.0) in each half; exact, so f16 arithmetic suffices
    r = (halves * np.float16(256.0)).view(np.uint16).reshape(-1, 2).copy().view(np.uint32).ravel()
    nan = (np.where((two & 0x7F) == 0x7F, 0x7E00, 0)
           | np.where((two & 0x7F00) == 0x7F00, 0x7E000000, 0)).astype(np.uint32)
    return r | nan


def test_software_path_matches_ml_dtypes_for_every_code():
    # each code once in the low and once in the high half of a pair
    pairs = (CODES | (CODES[::-1] << 8)).astype(np.uint32)
    got = software_e4m3x2_to_f16x2(pairs).view(np.uint16).reshape(-1, 2).view(np.float16)
    want = CODES.astype(np.uint8).view(ml_dtypes.float8_e4m3fn).astype(np.float16)
    for half, codes in ((0, CODES), (1, CODES[::-1])):
        g = got[:, half]
        w = want[codes]
        assert (np.isnan(g) == np.isnan(w)).all(), codes[np.isnan(g) != np.isnan(w)]
        ok = ~np.isnan(w)
        # bit-equal, so -0 stays -0
        assert (g[ok].view(np.uint16) == w[ok].view(np.uint16)).all(), codes[ok][g[ok].view(np.uint16) != w[ok].view(np.uint16)]
    assert np.isnan(got[0x7F, 0]) and np.isnan(got[0xFF, 0])   # the NaN codes, not +-480


@pytest.mark.parametrize("arch,hardware", [("compute_90a", True), ("compute_89", True), ("compute_80", False)])
def test_hardware_cvt_from_sm89(arch, hardware):
    from cupy.cuda import nvrtc

    from mla_cupy.compiler import BASE_OPTIONS
    from mla_cupy.render import render

    key = DecodeKey(layout="fp8", tile_rows=16)
    prog = nvrtc.createProgram(render(key), f"{key.name}.cu", [], [])
    try:
        nvrtc.compileProgram(prog, [*BASE_OPTIONS, f"-arch={arch}"])
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    ptx = ptx.decode() if isinstance(ptx, bytes) else ptx
    assert ("cvt.rn.f16x2.e4m3x2" in ptx) is hardware
    assert ("mul.rn.f16x2" in ptx) is not hardware   # the software path's scaling step
