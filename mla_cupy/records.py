"""The record formats of docs/spec.md §4: the one place for every row width, byte
offset, dtype and layout name that the host code and the kernels use (pure
Python, no NumPy).

A cached row of every layout is ``[latent | group scales? | rope?]``: 512 latent
("nope") dims ``k_c`` (also V), for ``fp8_ds_mla`` four float32 scales, then 64
rope dims ``k_r`` unless the model has none (``d_qk`` 512).  Each part has one
encoding per layout; every offset and width below follows from those encodings.
``kernel_constants`` renders the same facts as ``constexpr`` lines for the
templates.  The NumPy reference (``mla_cupy.reference``) spells the formats out
again on purpose: it is the independent, executable statement of the contract.
"""
from __future__ import annotations

import enum


class Layout(str, enum.Enum):
    """How a cached row is stored (docs/spec.md §4)."""

    BF16 = "bf16"
    FP16 = "fp16"
    FP8 = "fp8"                        # every dim e4m3, unit scale
    FP8_ROPE_AWARE = "fp8_rope_aware"  # e4m3 latent + bf16 rope, both / sigma (per token, separate)
    FP8_DS_MLA = "fp8_ds_mla"          # DeepSeek-V3.2: e4m3 latent, 4 float32 group scales, bf16 rope


D_LATENT = 512            # k_c, and V: the output width
D_V = D_LATENT
D_ROPE = 64               # k_r
D_QK = D_LATENT + D_ROPE  # 576
E4M3_MAX = 448.0          # largest finite float8_e4m3fn
GROUP_DIMS = 128          # fp8_ds_mla: latent dims per scale
NUM_GROUPS = D_LATENT // GROUP_DIMS
SCALE_BYTES = 4           # float32

# Encoding of each part, and the element bytes of each encoding.
ENCODING_BYTES = {"bf16": 2, "fp16": 2, "e4m3": 1}
_LATENT = {Layout.BF16: "bf16", Layout.FP16: "fp16", Layout.FP8: "e4m3",
           Layout.FP8_ROPE_AWARE: "e4m3", Layout.FP8_DS_MLA: "e4m3"}
_ROPE = {Layout.BF16: "bf16", Layout.FP16: "fp16", Layout.FP8: "e4m3",
         Layout.FP8_ROPE_AWARE: "bf16", Layout.FP8_DS_MLA: "bf16"}
# Q.K widths a layout stores; the byte records always carry the rope part.
D_QK_CHOICES = {Layout.BF16: (D_QK, D_LATENT), Layout.FP16: (D_QK, D_LATENT),
                Layout.FP8: (D_QK, D_LATENT), Layout.FP8_ROPE_AWARE: (D_QK,),
                Layout.FP8_DS_MLA: (D_QK,)}
# 16-bit layouts are arrays of their own dtype; byte records travel as uint8
# (torch's float8_e4m3fn holds the same bytes: FlashMLA's V3.2 cache is typed so).
BYTE_DTYPES = ("uint8", "float8_e4m3fn")
_CACHE_DTYPES = {Layout.BF16: ("bfloat16",), Layout.FP16: ("float16",)}
# Queries: the 16-bit layouts take their own dtype; fp8 takes bf16 or e4m3
# bytes, fp8_rope_aware its own record (one sigma per token), fp8_ds_mla bf16.
_Q_DTYPES = {Layout.BF16: ("bfloat16",), Layout.FP16: ("float16",),
             Layout.FP8: ("bfloat16",) + BYTE_DTYPES, Layout.FP8_ROPE_AWARE: BYTE_DTYPES,
             Layout.FP8_DS_MLA: ("bfloat16",)}


def latent_encoding(layout) -> str:
    return _LATENT[Layout(layout)]


def rope_encoding(layout) -> str:
    return _ROPE[Layout(layout)]


def is_byte_record(layout) -> bool:
    """fp8 layouts: rows land raw in shared memory and are dequantised there."""
    return Layout(layout) not in _CACHE_DTYPES


def scales_at(layout) -> int | None:
    """Byte offset of the NUM_GROUPS float32 group scales, or None."""
    return D_LATENT if Layout(layout) is Layout.FP8_DS_MLA else None


def rope_at(layout) -> int:
    """Byte offset of the rope part (where it would start when d_qk is 512)."""
    at = D_LATENT * ENCODING_BYTES[latent_encoding(layout)]
    return at + (NUM_GROUPS * SCALE_BYTES if scales_at(layout) is not None else 0)


def row_bytes(layout, d_qk: int = D_QK) -> int:
    """Bytes of one cached row: 1152/1024 (bf16, fp16), 576/512 (fp8), 640, 656."""
    layout = Layout(layout)
    if d_qk not in D_QK_CHOICES[layout]:
        raise ValueError(f"d_qk: layout {layout.value!r} stores {list(D_QK_CHOICES[layout])}, got {d_qk}")
    return rope_at(layout) + (d_qk - D_LATENT) * ENCODING_BYTES[rope_encoding(layout)]


ROW_BYTES = {(lay, d): row_bytes(lay, d) for lay in Layout for d in D_QK_CHOICES[lay]}


def cache_dtypes(layout) -> tuple[str, ...]:
    return _CACHE_DTYPES.get(Layout(layout), BYTE_DTYPES)


def row_width(layout, d_qk: int, dtype: str) -> int:
    """Elements of one cached row in an array of ``dtype`` (bytes for byte records)."""
    return row_bytes(layout, d_qk) // (1 if dtype in BYTE_DTYPES else 2)


# (cache dtype, row width in elements) -> layout, for PagedKVCollection(layout=None).
INFER_LAYOUT = {(dt, row_width(lay, d, dt)): lay
                for lay in Layout for d in D_QK_CHOICES[lay] for dt in cache_dtypes(lay)}
assert len(INFER_LAYOUT) == sum(len(D_QK_CHOICES[x]) * len(cache_dtypes(x)) for x in Layout), \
    "two layouts share a (dtype, row width): inference would be ambiguous"


def q_dtypes(layout) -> tuple[str, ...]:
    return _Q_DTYPES[Layout(layout)]


def q_is_record(layout) -> bool:
    """fp8_rope_aware queries are that layout's own record (e4m3 latent, bf16 rope)."""
    return Layout(layout) is Layout.FP8_ROPE_AWARE


def q_width(layout, d_qk: int) -> int:
    """Last dimension of q: the record bytes for a record query, else d_qk values."""
    return row_bytes(layout, d_qk) if q_is_record(layout) else d_qk


def output_dtype_name(layout) -> str:
    """fp16 caches produce fp16 output, every other layout bf16 (docs/spec.md §3)."""
    return "fp16" if Layout(layout) is Layout.FP16 else "bf16"


OUTPUT_DTYPES = {"bf16": "bfloat16", "fp16": "float16"}   # short name -> array dtype name


def output_dtype(layout) -> str:
    return OUTPUT_DTYPES[output_dtype_name(layout)]


def kernel_constants(layout, d_qk: int = D_QK) -> str:
    """The record facts as C++ ``constexpr`` lines (templates: ``{{ record_constants }}``).
    Offsets of parts a layout lacks are -1 so that a use fails loudly."""
    layout = Layout(layout)
    scales = scales_at(layout)
    lines = [
        f"// record format {layout.value}, d_qk = {d_qk} (mla_cupy/records.py)",
        f"constexpr int D_LATENT = {D_LATENT};   // k_c, and V",
        f"constexpr int D_ROPE = {d_qk - D_LATENT};",
        f"constexpr int ROW_BYTES = {row_bytes(layout, d_qk)};   // one cached row",
        f"constexpr int ROPE_AT = {rope_at(layout) if d_qk > D_LATENT else -1};   // byte offset of k_r",
        f"constexpr int SCALES_AT = {-1 if scales is None else scales};   // byte offset of NUM_GROUPS float32 scales",
        f"constexpr int GROUP_DIMS = {GROUP_DIMS};   // latent dims per group scale",
        f"constexpr int NUM_GROUPS = {NUM_GROUPS};",
        f"constexpr float E4M3_MAX = {E4M3_MAX:.1f}f;",
    ]
    return "\n".join(lines)
