"""Render a variant key to self-contained CUDA source (no CuPy import here).

Templates only set constants; the C++ picks code with ``if constexpr``.  The
rendered text has no includes, timestamps or paths, so CuPy's disk cache (keyed
on the full source, options, arch and NVRTC version) can never serve a stale
binary.
"""
from __future__ import annotations

import dataclasses
import functools
import pathlib

import jinja2

from .variants import QUANTIZE_INPUTS, Backend, CombineKey, DecodeKey, Layout, Mask, QuantizeKey

_MASK_IDS = {Mask.NULL: 0, Mask.CAUSAL: 1, Mask.SLIDING_WINDOW_CAUSAL: 2}


@dataclasses.dataclass(frozen=True)
class LaunchConfig:
    """What the host needs to launch a rendered decode kernel."""

    block_m: int      # query rows (heads x tokens) per CTA
    block_n: int      # keys per pipeline stage
    num_stages: int
    warps_n: int
    num_threads: int
    smem_bytes: int


def launch_config(key: DecodeKey) -> LaunchConfig:
    """Tile shape per row count, kept in one place so the template and the
    dispatcher cannot disagree.  64 rows: 8 warps (4 row blocks x 2 column
    halves, 128 fp32 accumulators each), 3 stages.  16/32 rows: 4 column
    quarters per row block so a short tile still has 4-8 warps to hide the
    loads; 16 rows keeps 2 stages so two CTAs share an SM."""
    if key.backend is Backend.HOPPER:
        # Q (64 rows) + NUM_STAGES K/V tiles in the swizzled layout, P words and
        # row factors of 128 threads, 1 KiB to align the base (mla_decode_wgmma.cu.j2).
        block_n, stages = hopper_tile(key)
        smem = (key.d_qk * 2 * (64 + stages * block_n) + 128 * block_n + 128 * 2 * 4 + 1024)
        return LaunchConfig(64, block_n, stages, 2, 256, smem)
    block_n = 32
    warps_n = 2 if key.tile_rows == 64 else 4
    num_stages = 2 if key.tile_rows == 16 else 3
    num_threads = 32 * (key.tile_rows // 16) * warps_n
    row_pad = key.d_qk + 8
    raw = key.layout not in (Layout.BF16, Layout.FP16)   # byte rows staged, then dequantised
    kv16_tiles = 1 if raw else num_stages
    p_bufs = 4 if key.layout is Layout.FP8_DS_MLA else 1   # one P per latent scale group
    elems = (key.tile_rows * row_pad + kv16_tiles * block_n * row_pad
             + p_bufs * key.tile_rows * (block_n + 8))
    smem = (2 * elems + (num_stages * block_n * key.row_bytes if raw else 0)
            + 4 * warps_n * key.tile_rows
            + 4 * num_stages * block_n * (2 if key.layout is Layout.FP8_ROPE_AWARE else 1))
    return LaunchConfig(key.tile_rows, block_n, num_stages, warps_n, num_threads, smem)


HOPPER_TILES = {"32x4": (32, 4), "64x2": (64, 2)}


def hopper_tile(key: DecodeKey) -> tuple[int, int]:
    """(keys per tile, tile buffers) of the wgmma kernel.  32 keys x 4 buffers
    keeps three tiles (108 KB) in flight per SM; 64 x 2 only one.
    MLA_CUPY_HOPPER_TILE=64x2 selects the other shape for experiments (read at
    render time: one process, one shape)."""
    import os
    choice = os.environ.get("MLA_CUPY_HOPPER_TILE") or "32x4"
    if choice not in HOPPER_TILES:
        raise ValueError(f"MLA_CUPY_HOPPER_TILE: expected one of {sorted(HOPPER_TILES)}, got {choice!r}")
    return HOPPER_TILES[choice]


@functools.lru_cache(maxsize=1)
def _environment() -> jinja2.Environment:
    loader = jinja2.FunctionLoader(_load_template)
    return jinja2.Environment(loader=loader, undefined=jinja2.StrictUndefined,
                              keep_trailing_newline=True, autoescape=False)


def kernels_dir() -> pathlib.Path:
    """Templates: ``mla_cupy/kernels`` in an installed wheel (pyproject maps the
    top-level ``kernels/`` there), ``../kernels`` in a checkout."""
    here = pathlib.Path(__file__).resolve().parent
    packaged = here / "kernels"
    return packaged if packaged.is_dir() else here.parent / "kernels"


def _load_template(name: str):
    path = kernels_dir() / name
    if not path.is_file():
        return None
    return path.read_text(encoding="utf-8")


def quantize_record_bytes(key: QuantizeKey) -> int:
    """Output bytes per row of a GPU quantiser."""
    return {"fp8": 576, "fp8_qk512": 512}.get(key.target, 656 if "ds_mla" in key.target else 640)


def render(key: DecodeKey | CombineKey | QuantizeKey) -> str:
    """CUDA source of one variant; its single ``extern "C"`` kernel is ``key.name``."""
    env = _environment()
    if isinstance(key, QuantizeKey):
        target = key.target
        return env.get_template("mla_quantize.cu.j2").render(
            name=key.name, target=target, in_dtype=key.in_dtype,
            target_id=0 if target.startswith("fp8_qk") or target == "fp8"
            else 1 if target.startswith("fp8_rope_aware") else 2,
            per_token=target == "fp8_rope_aware_q", ue8m0=target.endswith("ue8m0"),
            in_kind=QUANTIZE_INPUTS.index(key.in_dtype), d=512 if target == "fp8_qk512" else 576,
            rec_bytes=quantize_record_bytes(key))
    if isinstance(key, CombineKey):
        return env.get_template("mla_combine.cu.j2").render(
            name=key.name, is_fp16=key.out_dtype == "fp16")
    cfg = launch_config(key)
    if key.backend is Backend.HOPPER:
        return env.get_template("hopper/mla_decode_wgmma.cu.j2").render(
            name=key.name, is_fp16=key.layout is Layout.FP16, d_qk=key.d_qk,
            mma_type="f16" if key.layout is Layout.FP16 else "bf16",
            mask_name=key.mask.value, mask_id=_MASK_IDS[key.mask], smem_bytes=cfg.smem_bytes,
            block_n=cfg.block_n, num_stages=cfg.num_stages)
    return env.get_template("mla_decode.cu.j2").render(
        name=key.name, layout=key.layout.value, layout_id=list(Layout).index(key.layout),
        row_bytes=key.row_bytes, q_kind=_q_kind(key), q_row_bytes=_q_row_bytes(key),
        mask_name=key.mask.value, mask_id=_MASK_IDS[key.mask], sparsity=key.sparsity.value,
        fold=key.fold, is_fp16=key.layout is not Layout.BF16, d_qk=key.d_qk,
        tile_rows=key.tile_rows, block_n=cfg.block_n, num_stages=cfg.num_stages,
        warps_n=cfg.warps_n, smem_bytes=cfg.smem_bytes)


def _q_kind(key: DecodeKey) -> int:
    """How Q rows reach shared memory (see Q_KIND in mla_decode.cu.j2)."""
    if key.layout in (Layout.BF16, Layout.FP16):
        return 0
    if key.layout is Layout.FP8_ROPE_AWARE:
        return 3
    return 2 if key.q_fp8 else 1


def _q_row_bytes(key: DecodeKey) -> int:
    return {0: 2 * key.d_qk, 1: 2 * key.d_qk, 2: key.d_qk, 3: 640}[_q_kind(key)]
