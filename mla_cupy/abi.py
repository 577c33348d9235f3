"""Kernel ABIs: each kernel's parameter list, defined once (no CuPy import).

A table of :class:`Param` renders the ``extern "C"`` parameter list into the
templates (``{{ decode_params }}``, ``{{ combine_params }}``,
``{{ quantize_params }}``) and packs the launch arguments from a dict keyed by
the same names (:meth:`Abi.pack`), so the order, count and types of what the
host passes cannot drift from what a kernel declares.  Every decode family (the
portable mma.sync kernel, a Hopper kernel) takes ``DECODE``.
"""
from __future__ import annotations

import array
import dataclasses

import numpy as np

# C scalar type -> the NumPy scalar CuPy passes by value.  Pointers travel as
# device arrays, as addresses (ints, passed as np.uint64) or as a null np.uint64(0).
_SCALARS = {"int": np.int32, "i64": np.int64, "float": np.float32}
NULL = np.uint64(0)
SLOT_BYTES = 8   # pack_slots: a parameter in one 8-byte slot, a struct in several
# Structs passed by value: C type -> bytes.  TensorMap is a CUtensorMap
# (kernels/common/types.cuh.j2), declared `const __grid_constant__` so the
# kernel can take its address for TMA.
STRUCTS = {"TensorMap": 128}
TENSOR_MAP_DTYPE = np.dtype([("opaque", np.uint64, 16)])   # how CuPy passes it (a numpy void scalar)


@dataclasses.dataclass(frozen=True)
class Param:
    name: str
    ctype: str            # C type as the kernel declares it; pointers end in '*'
    doc: str              # shape or meaning, and where the host value comes from
    nullable: bool = False   # pointers only: may be null (unused by this launch)

    @property
    def is_pointer(self) -> bool:
        return self.ctype.endswith("*")

    @property
    def is_struct(self) -> bool:
        return self.ctype in STRUCTS

    @property
    def slots(self) -> int:
        """8-byte slots the parameter's value takes in :meth:`Abi.pack_slots`."""
        return STRUCTS[self.ctype] // SLOT_BYTES if self.is_struct else 1

    @property
    def host_type(self):
        """NumPy scalar type of a by-value parameter (None for a pointer or a struct)."""
        return None if self.is_pointer or self.is_struct else _SCALARS[self.ctype]


class Abi:
    """One kernel's parameters in signature order."""

    def __init__(self, kernel: str, params: tuple[Param, ...]):
        names = [p.name for p in params]
        if len(set(names)) != len(names):
            raise ValueError(f"{kernel}: duplicate parameter names in {names}")
        for p in params:
            if not p.is_pointer and p.ctype not in _SCALARS and not p.is_struct:
                raise ValueError(f"{kernel}.{p.name}: C type {p.ctype!r} has no host scalar type")
            if p.nullable and not p.is_pointer:
                raise ValueError(f"{kernel}.{p.name}: only pointers can be null")
        self.kernel, self.params = kernel, tuple(params)
        starts, at = [], 0
        for p in self.params:
            starts.append(at)
            at += p.slots
        self.slot_starts, self.num_slots = tuple(starts), at

    @property
    def names(self) -> tuple[str, ...]:
        return tuple(p.name for p in self.params)

    def signature(self) -> str:
        """The C parameter list, one parameter per line with its doc comment."""
        lines = []
        for i, p in enumerate(self.params):
            decl = (f"{p.ctype} __restrict__ {p.name}" if p.is_pointer
                    else f"const __grid_constant__ {p.ctype} {p.name}" if p.is_struct
                    else f"{p.ctype} {p.name}")
            comma = "," if i + 1 < len(self.params) else ""
            lines.append(f"    {decl}{comma}   // {p.doc}")
        return "\n".join(lines)

    def index(self, name: str) -> int:
        """Position of parameter ``name`` (ValueError when the kernel has none)."""
        try:
            return self.names.index(name)
        except ValueError:
            raise ValueError(f"{self.kernel}: no parameter {name!r}; expected one of "
                             f"{list(self.names)}") from None

    def slot(self, name: str) -> int:
        """First slot of parameter ``name`` in :meth:`pack_slots`."""
        return self.slot_starts[self.index(name)]

    def param_addresses(self, base: int) -> array.array:
        """``kernelParams`` for slots starting at address ``base``: each parameter's first slot."""
        return array.array("Q", [base + SLOT_BYTES * s for s in self.slot_starts])

    def pack_slots(self, values: dict) -> array.array:
        """:meth:`pack`'s arguments in 8-byte slots (``array('Q')``), what
        ``cuLaunchKernel``'s ``kernelParams`` point at (:meth:`param_addresses`):
        a pointer as its address (0 = null), a scalar as its C type's
        little-endian bytes, zero-padded, a struct as its bytes over
        :attr:`Param.slots` slots.  Pointers must be given as addresses (ints)."""
        slots = array.array("Q", bytes(SLOT_BYTES * self.num_slots))
        for at, p, v in zip(self.slot_starts, self.params, self.pack(values)):
            if p.is_pointer:
                if not isinstance(v, (int, np.integer)):
                    raise TypeError(f"{self.kernel} argument {p.name}: expected an address (int), "
                                    f"got {type(v).__name__}")
                slots[at] = int(v)
            elif p.is_struct:
                slots[at:at + p.slots] = array.array("Q", v)
            else:
                slots[at] = int.from_bytes(v.tobytes(), "little")
        return slots

    def unpack_slots(self, slots) -> tuple:
        """The inverse of :meth:`pack_slots`: the tuple :meth:`pack` gives, with
        pointers as ``np.uint64`` addresses and structs as numpy void scalars
        (for ``RawKernel.__call__``)."""
        out = []
        for at, p in zip(self.slot_starts, self.params):
            raw = slots[at]
            if p.is_pointer:
                out.append(np.uint64(raw))
            elif p.is_struct:
                out.append(np.frombuffer(array.array("Q", slots[at:at + p.slots]).tobytes(),
                                         dtype=TENSOR_MAP_DTYPE)[0])
            else:
                size = np.dtype(p.host_type).itemsize
                out.append(np.frombuffer(int(raw).to_bytes(8, "little")[:size], dtype=p.host_type)[0])
        return tuple(out)

    def pack(self, values: dict) -> tuple:
        """Launch arguments in signature order from ``{name: value}``; a missing
        or extra name, or None for a pointer that must not be null, is an error."""
        missing = [n for n in self.names if n not in values]
        extra = sorted(set(values) - set(self.names))
        if missing or extra:
            raise ValueError(f"{self.kernel} arguments: expected exactly {list(self.names)}, "
                             f"got {len(missing)} missing {missing} and {len(extra)} extra {extra}")
        args = []
        for p in self.params:
            v = values[p.name]
            if p.is_struct:
                size = STRUCTS[p.ctype]
                if not isinstance(v, (bytes, bytearray)) or len(v) != size:
                    raise ValueError(f"{self.kernel} argument {p.name}: expected {size} bytes "
                                     f"({p.doc}), got {type(v).__name__} of length "
                                     f"{len(v) if hasattr(v, '__len__') else '?'}")
                v = bytes(v)
            elif p.is_pointer:
                if v is None:
                    if not p.nullable:
                        raise ValueError(f"{self.kernel} argument {p.name}: expected a device "
                                         f"array ({p.doc}), got None")
                    v = NULL
                elif isinstance(v, (int, np.integer)) and not isinstance(v, bool):
                    v = np.uint64(v)    # an address
            else:
                v = p.host_type(v)
            args.append(v)
        return tuple(args)


P = Param
DECODE = Abi("mla_decode", (
    P("q", "const unsigned char*", "[T, H, Q_ROW_BYTES]"),
    P("input_row_offsets", "const u32*", "[B + 1] token offsets of the sequences"),
    P("blocks", "const unsigned char*", "[num_blocks, num_layers, page_size, ROW_BYTES] kv_collection.blocks"),
    P("lookup_table", "const u32*", "[B, lookup_stride] page ids"),
    P("cache_lengths", "const u32*", "[B]"),
    P("attn_sink", "const float*", "[H] natural-log units, or null", nullable=True),
    P("scalar_args", "const i64*", "[batch_size, q_max_seq_len, num_partitions]; only batch_size is read"),
    P("out", "u16*", "[T, H, D_V] (one partition)"),
    P("lse", "float*", "[T, H] or null (one partition)", nullable=True),
    P("o_part", "float*", "[P, T, H, D_V] workspace (several partitions)", nullable=True),
    P("lse_part", "float*", "[P, T, H] workspace (several partitions)", nullable=True),
    P("num_heads", "int", "H"),
    P("num_layers", "int", "kv_collection.num_layers"),
    P("layer_idx", "int", "layer of the cache to read"),
    P("page_size", "int", "kv_collection.page_size"),
    P("lookup_stride", "int", "lookup_table.shape[1]"),
    P("window", "int", "sliding-window length (sliding_window_causal), else 0"),
    P("num_tokens", "int", "T"),
    P("scale_log2", "float", "softmax scale * log2(e)"),
    P("group_rows", "int", "query rows per row group (schedule.row_tiling)"),
    P("group_tiles", "int", "CTAs (row tiles) per row group (schedule.row_tiling)"),
    P("split_len", "int", "keys per split, rounded up to whole granules (batch_invariant); "
      "0: the key axis cut into num_partitions splits"),
    P("segment_ctas", "int", "segment mode (narrow and ring kernels): gridDim.y shares of the batch's key "
      "tiles, each CTA's part of a sequence a segment (docs/spec.md section 7); 0: splits"),
    P("host_batch", "int", "the host's batch_size: bounds segment mode's walk and the pair's jobs (a grid "
      "z below it, schedule.pair_grid_z)"),
    P("seg_info", "int*", "[T, 4] segment mode: per token its sequence's first partial, partials and "
      "the token's row offset in them; null in split mode", nullable=True),
    P("schedule", "unsigned char*", "[CTAs, SCHEDULE_RECORD_BYTES] a DecodeSchedule's records (segment mode): "
      "each CTA's work, written or read as schedule_mode says; null: none", nullable=True),
    P("schedule_mode", "int", "decode_schedule.FIND (0): each CTA finds its work; WRITE: finds it and "
      "writes its record; READ: reads its record"),
    # sparse mode (null / 0 when dense)
    P("d_indices", "const int*", "[T, indices_stride] encoded rows block * page_size + slot", nullable=True),
    P("topk_lengths", "const int*", "[B] or null", nullable=True),
    P("logical_indices", "const int*", "[T, indices_stride] or null", nullable=True),
    P("extra_blocks", "const unsigned char*",
      "[extra_num_blocks, extra_num_layers, extra_page_size, ROW_BYTES] extra_k.blocks", nullable=True),
    P("extra_d_indices", "const int*", "[T, extra_stride]", nullable=True),
    P("extra_topk_lengths", "const int*", "[B] or null", nullable=True),
    P("indices_stride", "int", "d_indices.shape[1]"),
    P("extra_stride", "int", "extra_d_indices.shape[1]"),
    P("extra_page_size", "int", "extra_k.page_size (1 without extra_k)"),
    P("extra_num_layers", "int", "extra_k.num_layers (1 without extra_k)"),
    P("main_rows_total", "i64", "num_blocks * page_size of the main cache"),
    P("extra_rows_total", "i64", "num_blocks * page_size of extra_k (0 without)"),
    # fp8 layouts
    P("q_scale", "const float*", "[T] per-token sigma_Q, or null", nullable=True),
    P("scales", "const float*", "[num_blocks, num_layers, page_size] sigma (fp8_rope_aware)", nullable=True),
    P("extra_scales", "const float*", "the extra stream's sigma, likewise", nullable=True),
    # TMA (the Hopper kernels' 16-bit dense loader); last, so every other
    # parameter's slot is its index
    P("kv_box_rows", "int", "rows per TMA box of kv_map (tensor_map.box_rows); 0: no map, "
      "the kernel loads with cp.async"),
    P("kv_map", "TensorMap", "the cache's tensor map (tensor_map.encode_kv_map), zeros without one"),
))

COMBINE = Abi("mla_combine", (
    P("o_part", "const float*", "[P, T, H, D_V]"),
    P("lse_part", "const float*", "[P, T, H]"),
    P("attn_sink", "const float*", "[H] or null", nullable=True),
    P("input_row_offsets", "const u32*", "[B + 1]"),
    P("scalar_args", "const i64*", "[batch_size, q_max_seq_len, num_partitions]"),
    P("out", "u16*", "[T, H, D_V]"),
    P("lse", "float*", "[T, H] or null", nullable=True),
    P("num_heads", "int", "H"),
    P("num_tokens", "int", "T"),
    P("num_partitions_in", "int", "P (split mode)"),
    P("seg_info", "const int*", "[T, 4] segment mode (the decode's seg_info), null: P splits", nullable=True),
    P("segment_rows", "int", "segment mode: rows of a partial (the decode's tile rows), else 0"),
))

QUANTIZE = Abi("mla_quantize", (
    P("in", "const void*", "[rows, D] (queries: [T, H, D])"),
    P("out", "unsigned char*", "[rows, ROW_BYTES]"),
    P("sigmas", "float*", "[rows] (rope-aware) / [T] (queries), or null", nullable=True),
    P("rows", "i64", "rows to quantise"),
    P("num_heads", "int", "H (queries), else 1"),
))

CHECK = Abi("mla_check", (
    P("input_row_offsets", "const u32*", "[B + 1]"),
    P("num_offsets", "int", "B + 1"),
    P("num_tokens", "int", "T = q.shape[0]"),
    P("scalar_args", "const i64*", "[batch_size, q_max_seq_len, num_partitions]; element 0 is checked"),
    P("host_batch", "int", "the host batch_size the decode grid is built with"),
    P("q_max_seq_len", "int", "the host q_max_seq_len"),
    P("cache_lengths", "const u32*", "[>= B] C_b"),
    P("lookup_table", "const u32*", "[R, lookup_stride] page ids"),
    P("lookup_stride", "int", "lookup_table.shape[1]"),
    P("page_size", "int", "kv_collection.page_size"),
    P("num_blocks", "i64", "kv_collection.num_blocks"),
    P("window", "int", "sliding-window length, else 0"),
    P("sparse", "int", "1: sparse mode (indices checked, the table not read)"),
    P("fold", "int", "fold_shared_index: one main index row per sequence"),
    P("d_indices", "const int*", "[T, indices_stride]", nullable=True),
    P("indices_stride", "int", "d_indices.shape[1]"),
    P("topk_lengths", "const int*", "[>= B] or null", nullable=True),
    P("logical_indices", "const int*", "[T, indices_stride]; null unless read (causal)", nullable=True),
    P("main_rows_total", "i64", "num_blocks * page_size of the main cache"),
    P("extra_d_indices", "const int*", "[T, extra_stride] or null", nullable=True),
    P("extra_stride", "int", "extra_d_indices.shape[1]"),
    P("extra_topk_lengths", "const int*", "[>= B] or null", nullable=True),
    P("extra_rows_total", "i64", "num_blocks * page_size of extra_k"),
    P("results", "u64*", "[B, 2] per sequence: first violation key (or ~0) and its value"),
))
