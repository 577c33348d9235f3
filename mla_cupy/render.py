"""Render a variant key to self-contained CUDA source (no CuPy import here).

Templates set constants and C++ picks code with ``if constexpr``; Jinja only
leaves out whole helper blocks a variant never calls.  Enums reach the
templates by name (``constexpr Layout LAYOUT = Layout::fp8;``, rendered from
the Python enums), record offsets from :mod:`mla_cupy.records`, parameter
lists from :mod:`mla_cupy.abi`.  The rendered text has no includes,
timestamps or paths, so CuPy's disk cache (keyed on the full source, options,
arch and NVRTC version) can never serve a stale binary.

Templates live in ``kernels/`` by family: ``common/`` (helpers every family
includes), ``portable/`` (the mma.sync decode kernel), ``hopper/`` (sm_90a
decode kernels), ``combine/``, ``quantize/``, ``check/`` (the checked mode).
"""
from __future__ import annotations

import dataclasses
import enum
import functools
import pathlib
import typing

import jinja2

from . import abi, decode_schedule, environment, records, tensor_map
from .schedule import PAIR_MAX_JOBS
from .variants import (HOPPER_BYTE_LAYOUTS, QUANTIZE_INPUTS, Backend, CheckKey, CombineKey, DecodeKey, Layout,
                       Mask, QuantizeKey, Schedule, Sparsity)

DECODE_TEMPLATE = "portable/mla_decode.cu.j2"
HOPPER_DECODE_TEMPLATE = "hopper/mla_decode_wgmma.cu.j2"
COMBINE_TEMPLATE = "combine/mla_combine.cu.j2"
QUANTIZE_TEMPLATE = "quantize/mla_quantize.cu.j2"
CHECK_TEMPLATE = "check/mla_check.cu.j2"
COMBINE_GROUP_THREADS = records.D_V // 4    # one float4 of each partial per thread of a group
COMBINE_MAX_GROUPS = 8
COMBINE_UNROLL = 4                          # partials a thread has in flight at once
QUANTIZE_WARPS = 8


def combine_threads(num_partitions: int) -> int:
    """Threads of a combine CTA for ``num_partitions`` splits: one group of
    COMBINE_GROUP_THREADS per COMBINE_UNROLL partitions, up to
    COMBINE_MAX_GROUPS, so that few rows with many splits keep enough loads in
    flight.  It depends on P alone: a row's summation order (groups summed in
    order) must not depend on the batch (docs/spec.md §10)."""
    groups = min(COMBINE_MAX_GROUPS, max(1, -(-num_partitions // COMBINE_UNROLL)))
    return COMBINE_GROUP_THREADS * groups


# Rows a combine CTA merges where a row gets one group (warp rows: a warp a row).
COMBINE_WARP_ROWS = 8


class CombineShape(typing.NamedTuple):
    warp_rows: bool   # the CombineKey axis
    grid: tuple
    block: tuple


def combine_shape(num_partitions: int, num_heads: int, num_tokens: int) -> CombineShape:
    """The combine for ``num_partitions`` splits: a CTA a row, combine_threads(P)
    threads (grid (H, T)), or, where that is one group of COMBINE_GROUP_THREADS, the
    _warp_rows kernel: COMBINE_WARP_ROWS rows a CTA, a warp each (grid
    (ceil(H / rows), T), block (32, rows)), whose sums are the one group's bit for
    bit (kernels/combine/mla_combine.cu.j2).  The choice depends on P alone, as the
    summation order must (docs/spec.md section 10)."""
    threads = combine_threads(num_partitions)
    if threads == COMBINE_GROUP_THREADS:
        return CombineShape(True, (-(-num_heads // COMBINE_WARP_ROWS), num_tokens), (32, COMBINE_WARP_ROWS))
    return CombineShape(False, (num_heads, num_tokens), (threads,))


class QKind(str, enum.Enum):
    """How Q rows become MMA operands in shared memory."""

    SAME = "same"        # already the MMA's 16-bit type: copied (cp.async)
    BF16 = "bf16"        # bf16 values, converted to fp16
    E4M3 = "e4m3"        # e4m3 bytes (fp8 layout, qfp8)
    RECORD = "record"    # the layout's own record (fp8_rope_aware)


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
        # Q (64 rows) + NUM_STAGES K/V tiles in the swizzled layout, 1 KiB to
        # align the base, and what each schedule exchanges.
        block_n, stages = hopper_tile(key)
        if key.schedule is Schedule.SEESAW:
            # Q and two 64-key buffers; P(b) in its own slot, P(a)' in a's rope
            # chunk (D_QK 576) or a slot of its own (512); two row-max vectors;
            # a full mbarrier per buffer column chunk and an empty one per buffer
            # half, the set-up's results (64 bytes).  Threads: the two
            # math warpgroups and the loading warpgroup (mla_decode_seesaw.cu.j2).
            # The `_segments` twin: the walks and segment records (SEESAW_SEGMENT_BYTES).
            p_slots = 1 if key.d_qk > 512 else 2
            smem = (key.d_qk * 2 * (64 + stages * block_n) + p_slots * 128 * block_n
                    + 2 * 64 * 4 + 8 * (key.d_qk // 64 + 2) * stages + 64 + 1024
                    + (SEESAW_SEGMENT_BYTES if key.segments else 0))
            return LaunchConfig(64, block_n, stages, 2, 384, smem)
        if key.schedule is Schedule.PAIR:
            # Q and two 64-slot buffers (P(j) in j's rope chunk), the row factors of 128
            # threads by tile parity, the slots' visibility bits (8 words a buffer),
            # full_local, full_remote and empty mbarriers per buffer, a job's final row
            # factors, the jobs' set-up (64 bytes each) and their count
            # (mla_decode_pair.cu.j2).
            smem = (key.d_qk * 2 * (64 + stages * block_n) + 2 * 128 * 8 + stages * 8 * 4
                    + 3 * stages * 8 + 128 * 8 + 64 * PAIR_MAX_JOBS + 16 + 1024)
            return LaunchConfig(64, block_n, stages, 2, 384, smem)
        if key.schedule is Schedule.NARROW:
            # Q (the tile's 16 or 32 rows), `stages` slots of one 128-byte column chunk of
            # a 64-key tile each (a full and an empty mbarrier each), P^T (the rows' 64 keys),
            # fp8 layouts' raw records of a tile (and their mbarrier), the row
            # reductions of 4 warps (mla_decode_narrow.cu.j2).  Threads: the math
            # warpgroups, then the loading warp's warpgroup (or the producer's two).
            return LaunchConfig(key.tile_rows, block_n, stages, 1,
                                128 * (narrow_consumers(key) + narrow_producers(key)),
                                _narrow_fixed_bytes(key) + stages * _narrow_stage_bytes(key))
        # P words and row factors of 128 threads, a full and an empty mbarrier per
        # buffer (the producer warpgroup's hand-over), and a third for its raw bytes
        # (fp8 layouts); sparse: a token interval (int2) per ring slot; dense 16-bit:
        # segment mode's walks, two a role (mla_decode_wgmma.cu.j2).  Threads: two math
        # warpgroups and the producer.
        sparse = key.sparsity is Sparsity.SPARSE
        staged = key.layout in HOPPER_BYTE_LAYOUTS
        exchange = 128 * block_n + 128 * 2 * 4 + 8 * stages * 2
        smem = (key.d_qk * 2 * (64 + stages * block_n) + exchange + 1024
                + (8 * stages * block_n if sparse else 0) + (8 * stages if staged else 0)
                + (RING_WALK_BYTES if ring_segments(key) else 0))
        return LaunchConfig(64, block_n, stages, 2, 384, smem)
    block_n = 32
    warps_n = 2 if key.tile_rows == 64 else 4
    num_stages = 2 if key.tile_rows == 16 else 3
    num_threads = 32 * (key.tile_rows // 16) * warps_n
    row_pad = key.d_qk + 8
    raw = records.is_byte_record(key.layout)   # byte rows staged, then dequantised
    kv16_tiles = 1 if raw else num_stages
    p_bufs = records.NUM_GROUPS if records.scales_at(key.layout) is not None else 1   # one P per scale group
    elems = (key.tile_rows * row_pad + kv16_tiles * block_n * row_pad
             + p_bufs * key.tile_rows * (block_n + 8))
    smem = (2 * elems + (num_stages * block_n * key.row_bytes if raw else 0)
            + 4 * warps_n * key.tile_rows
            + 4 * num_stages * block_n * (2 if key.layout is Layout.FP8_ROPE_AWARE else 1))
    return LaunchConfig(key.tile_rows, block_n, num_stages, warps_n, num_threads, smem)


# (keys per tile, tile buffers) and template of each schedule (variants.Schedule); the
# narrow kernel's buffers are slots of one 128-byte column chunk (8 KiB) each, as many
# as fit beside the rest of its shared memory (hopper_tile: 25 for 16-bit caches, 20-21
# beside fp8 layouts' raw records)
HOPPER_TILES = {Schedule.RING: (32, 4), Schedule.SEESAW: (64, 2), Schedule.NARROW: (64, 0),
                Schedule.PAIR: (64, 2)}
HOPPER_SMEM_PER_BLOCK = 232448   # sm_90's opt-in per-block shared memory
# The dense 16-bit ring's segment walks in shared memory: two a role (the producer and
# two math warpgroups), 64 bytes each (a SharesWalk; mla_decode_wgmma.cu.j2)
RING_WALK_BYTES = 3 * 2 * 64
# The seesaw's `_segments` twin: two walk slots (64 bytes), two segment records (48 bytes)
# and their two mbarriers (mla_decode_seesaw.cu.j2)
SEESAW_SEGMENT_BYTES = 2 * 64 + 2 * 48 + 2 * 8


def ring_segments(key) -> bool:
    """Whether the ring kernel of this variant has segment mode (its SEGMENTS): dense
    16-bit caches without a window (dispatch.segment_ctas asks it)."""
    return (key.sparsity is Sparsity.DENSE and key.layout not in HOPPER_BYTE_LAYOUTS
            and key.mask is not Mask.SLIDING_WINDOW_CAUSAL)
HOPPER_TEMPLATES = {Schedule.RING: HOPPER_DECODE_TEMPLATE, Schedule.SEESAW: "hopper/mla_decode_seesaw.cu.j2",
                    Schedule.NARROW: "hopper/mla_decode_narrow.cu.j2", Schedule.PAIR: "hopper/mla_decode_pair.cu.j2"}
# the schedules that load their tiles by TMA alone (they need the kv_map)
TMA_ONLY_SCHEDULES = (Schedule.SEESAW, Schedule.NARROW)
# The keys a TMA box spans where the page allows (tensor_map.box_rows' box_keys): the
# seesaw's whole 64-key tile, one copy a column chunk (9 a tile, not 18: its refills go out
# ~250-450 clocks sooner, the h128 rows 0.3-1.2% faster); the narrow kernel keeps 32-row
# boxes (64-row ones made its memory-bound h16 rows 1-3% slower).  H200, session 37.
TMA_BOX_KEYS = {Schedule.SEESAW: 64, Schedule.NARROW: 32}


def tma_box_keys(key: DecodeKey) -> int:
    """The keys a TMA box of the variant's kernel spans where its page allows (dense `fp8`
    rows, narrow_tma_raw: the narrow kernel's whole tile, tensor_map.raw_box_rows)."""
    if narrow_tma_raw(key):
        return HOPPER_TILES[Schedule.NARROW][0]
    return TMA_BOX_KEYS[key.schedule]


HOPPER_LOADS = ("cp_async",)


def hopper_loads() -> str:
    """How the ring kernel loads dense 16-bit tiles: by cp.async, from its producer
    warpgroup.  MLA_CUPY_HOPPER_LOADS (read per call) may still say so; its other
    value, "tma" (warpgroup 1's warp 0 issuing tensor-map boxes, 1-3% slower on the
    H200), went with the producer (session 21, tools/results/NOTES.md), and is
    refused rather than ignored."""
    choice = environment.get(environment.HOPPER_LOADS) or "cp_async"
    if choice not in HOPPER_LOADS:
        why = " (the ring kernel's TMA loads were removed: its producer warpgroup loads every tile)" \
            if choice == "tma" else ""
        raise ValueError(f"MLA_CUPY_HOPPER_LOADS: expected one of {list(HOPPER_LOADS)} or unset, "
                         f"got {choice!r}{why}")
    return choice


def uses_kv_map(key: DecodeKey) -> bool:
    """Whether the variant's launch gets a tensor map (abi.DECODE kv_map,
    kv_box_rows > 0): the seesaw and narrow kernels over dense 16-bit caches (they
    load by TMA only), and the narrow kernel over dense 576-byte `fp8` rows (narrow_tma_raw).
    Every other kernel ignores the map."""
    if key.backend is not Backend.HOPPER or key.sparsity is not Sparsity.DENSE:
        return False
    if records.is_byte_record(key.layout):
        return narrow_tma_raw(key)
    if key.schedule in TMA_ONLY_SCHEDULES:
        return True
    hopper_loads()   # a retired MLA_CUPY_HOPPER_LOADS=tma is an error, not ignored
    return False


def needs_kv_map(key: DecodeKey) -> bool:
    """Whether the variant's kernel cannot run without a map (the seesaw, the narrow kernel
    of 16-bit caches, and that of dense 576-byte `fp8` rows)."""
    return key.schedule in TMA_ONLY_SCHEDULES and (not records.is_byte_record(key.layout) or narrow_tma_raw(key))


def hopper_tile(key: DecodeKey) -> tuple[int, int]:
    """(keys per tile, tile buffers) of a wgmma kernel: the ring's 32 keys x 4
    buffers keep three tiles (108 KB) in flight per SM (its pipelined
    warpgroup 0 needs three buffers at least, so 64-key tiles do not fit);
    the seesaw takes 64-key tiles in two buffers; the narrow kernel 64-key tiles in
    as many 8 KiB column-chunk slots as fit."""
    block_n, stages = HOPPER_TILES[key.schedule]
    if key.schedule is Schedule.NARROW:
        stages = (HOPPER_SMEM_PER_BLOCK - _narrow_fixed_bytes(key)) // _narrow_stage_bytes(key)
        if narrow_alternate(key):
            # an even ring, so each raw tile has one reader: with an odd one a warpgroup can
            # wait for a raw tile's next phase while the other's, the phase before, has not
            # landed (bulk copies complete out of order), and the parity reads as done
            stages -= stages % narrow_consumers(key)
    return block_n, stages


def _narrow_stage_bytes(key: DecodeKey) -> int:
    """Shared memory of one stage of a narrow kernel: a slot (one 128-byte column chunk
    of a 64-key tile) and its two mbarriers, or under narrow_rs a tile of raw records and
    its two mbarriers."""
    block_n = HOPPER_TILES[Schedule.NARROW][0]
    if narrow_rs(key):   # (sparse: and the tokens that see each key of the tile, an int2 a key)
        return raw_tile_bytes(key) + block_n * (8 if key.sparsity is Sparsity.SPARSE else 0) + 16
    return block_n * 128 + 16


# The narrow kernel's segment walks (the loader and up to two math warpgroups, two
# buffers each) and split mode's segment, in shared memory over 16-bit caches
# (mla_decode_narrow.cu.j2 asserts they fit).
NARROW_WALK_BYTES = 416


def hopper_mma_type(key: DecodeKey) -> str:
    """The Hopper kernels' wgmma operand type: the cache's for 16-bit caches, fp16 for
    `fp8` rows in the narrow schedule (e4m3 -> fp16 is one conversion per two values and
    exact, to bf16 four: fp8 h16 383 -> 357 us on the H200; docs/spec.md section 3,
    Precision) and for `fp8_ds_mla` records where the math applies their group scales
    (narrow_math_scales), bf16 otherwise (bf16 queries as they are; `fp8_ds_mla`'s group
    scales applied as its records are decoded)."""
    if (key.layout is Layout.FP16 or (key.layout is Layout.FP8 and key.schedule is Schedule.NARROW)
            or narrow_math_scales(key)):
        return "f16"
    return "bf16"


def narrow_math_scales(key: DecodeKey) -> bool:
    """Whether a narrow kernel's math warpgroup applies `fp8_ds_mla`'s group scales (to each
    group's partial scores and to one P^T copy a group) so that its producer decodes e4m3
    to fp16 unscaled, one conversion per two values as for `fp8` rows, instead of six
    instructions a pair (e4m3 -> f32, times the scale, -> bf16).  16 rows only: the
    group's partial scores take 4 x 8 more accumulator registers a thread; at 32 rows
    (narrow_features) each math warpgroup holds two groups' 2 x 16 beside its half of
    O^T (64)."""
    return (key.backend is Backend.HOPPER and key.schedule is Schedule.NARROW
            and key.layout is Layout.FP8_DS_MLA and key.tile_rows in (16, 32))


def narrow_rs(key: DecodeKey) -> bool:
    """Whether a narrow kernel's math warpgroup builds wgmma's A operand from the raw
    records itself (RS: the e4m3 columns by ldmatrix and one conversion per two values,
    `fp8_ds_mla`'s bf16 rope as it is), so that no producer decodes them into slots:
    `fp8_ds_mla` (narrow_math_scales) and `fp8` records at 16 and 32 rows, which two loading
    warps copy into a ring of whole tiles (sparse: gather, a record a key, and write
    beside each tile the tokens that see its keys; mla_decode_narrow.cu.j2)."""
    return (key.backend is Backend.HOPPER and key.schedule is Schedule.NARROW and key.tile_rows in (16, 32)
            and key.layout in (Layout.FP8_DS_MLA, Layout.FP8))


def narrow_tma_raw(key: DecodeKey) -> bool:
    """Whether a narrow kernel's loading warp copies the raw records by TMA boxes instead of
    bulk copies: dense `fp8` rows of 576 bytes (tensor_map.kv_map_arguments: five 128-byte
    swizzled column boxes a row box, the last half past the row, so ldmatrix's eight rows hit
    eight banks by the swizzle, without the pairs' padding, and every piece is sector-aligned).
    A page size no box fits runs the ring (compiler.choose_hopper_schedule)."""
    return narrow_rs(key) and tma_raw_records(key)


def tma_raw_records(key: DecodeKey) -> bool:
    """The records narrow_tma_raw loads by TMA (whichever schedule a key names yet)."""
    return key.layout is Layout.FP8 and key.sparsity is Sparsity.DENSE and key.d_qk == 576


def raw_group(key: DecodeKey) -> int:
    """Keys a narrow kernel's raw tile holds back to back (one bulk copy where their records
    are consecutive in the cache), each group then padded by 16 bytes.  Under narrow_rs the
    eight rows of an ldmatrix (eight consecutive keys, one 16-byte column) must fall in
    eight bank columns: a record of c 16-byte columns, c = 2^v x odd, puts 8 >> v keys in
    eight distinct columns (mod 8), and the pad shifts the next group by one column.
    `fp8_ds_mla`'s 656 bytes (41 columns): the whole tile unpadded; `fp8`'s 576 (36 = 4 x 9):
    pairs, 32 copies of 1152 bytes a dense tile; 512 (32): one key.  Without narrow_rs
    the whole tile, unpadded."""
    columns = key.row_bytes // 16
    if not narrow_rs(key) or columns % 2 == 1 or narrow_tma_raw(key):
        return HOPPER_TILES[Schedule.NARROW][0]
    v = (columns & -columns).bit_length() - 1
    return 8 >> min(v, 3)


def raw_group_bytes(key: DecodeKey) -> int:
    """Bytes from a raw tile's group of raw_group keys to the next."""
    group = raw_group(key)
    return group * key.row_bytes + (0 if group == HOPPER_TILES[Schedule.NARROW][0] else 16)


def raw_key_offset(key: DecodeKey, n: int) -> int:
    """Byte offset of key n's record in a narrow kernel's raw tile (the kernel's raw_key)."""
    group = raw_group(key)
    return (n // group) * raw_group_bytes(key) + (n % group) * key.row_bytes


def raw_piece_offset(key: DecodeKey, n: int, p: int) -> int:
    """Byte offset of key n's 16-byte piece p in a narrow kernel's raw tile (the kernel's
    raw_at(n, p)): consecutive in its record (raw_key_offset), or under narrow_tma_raw in
    column box p // 8, row n, 16-byte column (p % 8) ^ (n % 8) (TMA's 128-byte swizzle)."""
    if narrow_tma_raw(key):
        cols = tensor_map.RAW_BOX_BYTES // 16
        return (p // cols * HOPPER_TILES[Schedule.NARROW][0] * tensor_map.RAW_BOX_BYTES
                + n * tensor_map.RAW_BOX_BYTES + ((p % cols) ^ (n % 8)) * 16)
    return raw_key_offset(key, n) + 16 * p


def raw_tile_bytes(key: DecodeKey) -> int:
    """Bytes of one raw tile of a narrow kernel (64 keys' records, raw_group's padding;
    narrow_tma_raw: whole column boxes, the last one's zeros past the rows included)."""
    if narrow_tma_raw(key):
        boxes = -(-key.row_bytes // tensor_map.RAW_BOX_BYTES)
        return boxes * HOPPER_TILES[Schedule.NARROW][0] * tensor_map.RAW_BOX_BYTES
    return HOPPER_TILES[Schedule.NARROW][0] // raw_group(key) * raw_group_bytes(key)


def narrow_consumers(key: DecodeKey) -> int:
    """Math warpgroups of a narrow kernel: two of 16 rows for a 32-row tile over 16-bit
    caches (one's MMAs run under the other's softmax); two under narrow_rs, each with every
    row (narrow_alternate at 16 rows, narrow_features at 32)."""
    if narrow_rs(key):
        return 2
    return 2 if key.tile_rows == 32 and not records.is_byte_record(key.layout) else 1


def narrow_alternate(key: DecodeKey) -> bool:
    """Whether a narrow kernel's math warpgroups split the *tiles* (warpgroup w takes tiles
    j = w mod 2, each with all the rows, its own running max, row sums and O^T, merged once
    at the end) rather than the rows: under narrow_rs, where each math warpgroup converts
    the keys it reads, so that two warpgroups of rows would convert every key twice, and one
    warpgroup's issue (ldmatrix, conversions, RS wgmmas of every key) bounded the dense
    rows (tools/results/NOTES.md session 44: without DRAM traffic 216.7 of 224.3 us).
    16 rows: at 32, a warpgroup's O^T of all the rows (128 registers a thread) spills."""
    return narrow_rs(key) and key.tile_rows == 16


def narrow_features(key: DecodeKey) -> bool:
    """Whether a narrow kernel's two math warpgroups split the *features* of every tile:
    under narrow_rs at 32 rows, warpgroup w converts latent chunks 4 w .. 4 w + 3 and half
    the rope of each key, computes the partial S^T over them, the two partials are summed
    through shared memory, each runs the softmax of its 16 rows (P^T and the rows' factors
    through shared memory), and each accumulates O^T of all the rows over its four chunks:
    every key converted once, a warpgroup's O^T 64 registers a thread (tools/results/NOTES.md
    session 45's design; the softmax split by rows, session 47)."""
    return narrow_rs(key) and key.tile_rows == 32


def narrow_wg_rows(key: DecodeKey) -> int:
    """Rows of a narrow kernel's math warpgroup (its wgmma N)."""
    return key.tile_rows if narrow_rs(key) else key.tile_rows // narrow_consumers(key)


def narrow_producers(key: DecodeKey) -> int:
    """Warpgroups that feed a narrow kernel's math: one, whose loading warp issues a
    16-bit cache's TMA boxes, or whose two copying warps copy fp8 records (narrow_rs: the
    math decodes them; the dequantising producers of sessions 12-44, two warpgroups at 16
    rows and one at 32, are gone: tools/results/NOTES.md sessions 43-46)."""
    return 1


def raw_skew(key: DecodeKey) -> int:
    """How far the ring schedule's fp8 producer rotates each key's reads
    of its staged record, in 16-byte pieces (key n starts at piece SKEW n mod 8 of each
    group of eight its thread reads).
    A quarter warp's LDS.128 reads the same piece of eight consecutive keys' records,
    row_bytes apart; in 16-byte bank columns that is row_bytes / 16 mod 8 apart, so `fp8`
    rows (36 columns) fall in 2 of the 8 (4-way conflicted), 512-byte rows in 1.  With the
    rotation key n's i-th read is in column (n + i) mod 8.  fp8_ds_mla's 41-column records
    need none (0), which also keeps its group scales' indices static; the other layouts'
    rows are not staged for a producer (0)."""
    if key.layout not in (Layout.FP8, Layout.FP8_DS_MLA):
        return 0
    skew = (1 - key.row_bytes // 16) % 8
    if skew and records.scales_at(key.layout) is not None:
        raise ValueError(f"{key.name}: a skewed raw read needs unscaled pieces, got {key.layout.value}")
    return skew


def _narrow_fixed_bytes(key: DecodeKey) -> int:
    """The narrow kernel's shared memory besides its stages: Q, P^T, the row reductions,
    the merge's rows (narrow_alternate) or the exchanged scores (narrow_features), the
    slots' unused mbarriers (fp8 layouts), the segment walks, the alignment."""
    rows, block_n = key.tile_rows, HOPPER_TILES[Schedule.NARROW][0]
    raw = records.is_byte_record(key.layout)
    # narrow_rs: the records' tiles are its stages (_narrow_stage_bytes), each holding its
    # keys' tokens (sparse) and group scales; it keeps the unused slot's two mbarriers
    rs = narrow_rs(key)
    assert rs == raw, key.name   # fp8 records: the RS form only (sparse: each key's tokens in the stages)
    # narrow_math_scales: a P^T a scale group, and each key's group scales (float32)
    features = narrow_features(key)
    pt_copies = records.NUM_GROUPS if narrow_math_scales(key) else 1
    # narrow_alternate / narrow_features: each math warpgroup its own P^T and row reductions
    # (of all the rows), and split mode's segment (the walk area), which each role reads after
    # its setmaxnreg; alternate: the second one's row maxima and sums for the merge;
    # features: one P^T of every row, each one's partial S^T (float32 a thread's
    # accumulators) for the other, each row's factor and output factor
    alternate = narrow_alternate(key)
    turns = narrow_consumers(key) if rs else 1
    merge_rows = 2 * 4 * rows if alternate else 0
    exchange = turns * block_n * rows * 4 + 2 * rows * 4 if features else 0
    return (key.d_qk * 2 * rows + (1 if features else turns) * pt_copies * rows * 2 * block_n
            + (2 * 8 if rs else 0)
            + turns * 4 * rows * 4 + merge_rows + exchange
            + NARROW_WALK_BYTES + 1024)


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
    """``name`` is a path under kernels/ with '/' separators (``common/mma.cuh.j2``)."""
    path = kernels_dir().joinpath(*name.split("/"))
    if not path.is_file():
        return None
    return path.read_text(encoding="utf-8")


def cpp_enum(cls: type[enum.Enum], type_name: str, const_name: str, value) -> str:
    """``enum class type_name {...}; constexpr type_name const_name = type_name::value;``
    from a Python str-enum: the members' values are the C++ enumerator names."""
    members = ", ".join(m.value for m in cls)
    return (f"enum class {type_name} {{ {members} }};\n"
            f"constexpr {type_name} {const_name} = {type_name}::{cls(value).value};")


def q_kind(key: DecodeKey) -> QKind:
    if not records.is_byte_record(key.layout):
        return QKind.SAME
    if records.q_is_record(key.layout):
        return QKind.RECORD
    return QKind.E4M3 if key.q_fp8 else QKind.BF16


def q_row_bytes(key: DecodeKey) -> int:
    width = records.q_width(key.layout, key.d_qk)
    return width if q_kind(key) in (QKind.E4M3, QKind.RECORD) else 2 * width


def decode_template_values(key: DecodeKey) -> dict:
    """What every decode template (any family) is rendered with."""
    cfg = launch_config(key)
    consumers = narrow_consumers(key)
    return dict(
        name=key.name, layout=key.layout.value, mask=key.mask.value, sparsity=key.sparsity.value,
        fold=key.fold, d_qk=key.d_qk, tile_rows=key.tile_rows, evict_first=key.evict_first,
        multicast=key.multicast, segments=key.segments,
        layout_enum=cpp_enum(Layout, "Layout", "LAYOUT", key.layout),
        mask_enum=cpp_enum(Mask, "Mask", "MASK", key.mask),
        q_kind_enum=cpp_enum(QKind, "QKind", "Q_KIND", q_kind(key)),
        record_constants=records.kernel_constants(key.layout, key.d_qk),
        q_row_bytes=q_row_bytes(key), decode_params=abi.DECODE.signature(),
        schedule_constants=decode_schedule.kernel_constants(),
        raw=records.is_byte_record(key.layout), is_fp16=key.layout is not Layout.BF16,
        group_scale=records.scales_at(key.layout) is not None,
        sparse=key.sparsity.value == "sparse",
        block_n=cfg.block_n, num_stages=cfg.num_stages, warps_n=cfg.warps_n,
        num_threads=cfg.num_threads, smem_bytes=cfg.smem_bytes, walk_bytes=NARROW_WALK_BYTES,
        seesaw_segment_bytes=SEESAW_SEGMENT_BYTES,
        max_jobs=PAIR_MAX_JOBS,
        consumers=consumers, wg_rows=narrow_wg_rows(key), alternate=narrow_alternate(key),
        features=narrow_features(key),
        producers=narrow_producers(key),
        raw_skew=raw_skew(key), math_scales=narrow_math_scales(key),
        rs=narrow_rs(key), raw_group=raw_group(key), raw_group_bytes=raw_group_bytes(key),
        tma_raw=narrow_tma_raw(key), raw_box_bytes=tensor_map.RAW_BOX_BYTES)


def render(key: DecodeKey | CombineKey | QuantizeKey | CheckKey) -> str:
    """CUDA source of one variant; its single ``extern "C"`` kernel is ``key.name``."""
    env = _environment()
    if isinstance(key, CheckKey):
        from . import checked
        return env.get_template(CHECK_TEMPLATE).render(
            name=key.name, num_threads=checked.NUM_THREADS, key_shift=checked.KEY_SHIFT,
            key_limit=checked.KEY_LIMIT, check_params=abi.CHECK.signature(),
            rule_enum=f"enum class Rule : u64 {{ {', '.join(r.name for r in checked.RULES)} }};")
    if isinstance(key, QuantizeKey):
        in_enum = enum.Enum("In", {x: x for x in QUANTIZE_INPUTS}, type=str)
        return env.get_template(QUANTIZE_TEMPLATE).render(
            name=key.name, target=key.target, in_dtype=key.in_dtype,
            layout_enum=cpp_enum(Layout, "Layout", "LAYOUT", key.layout),
            record_constants=records.kernel_constants(key.layout, key.d_in),
            in_enum=cpp_enum(in_enum, "In", "IN", key.in_dtype), d_in=key.d_in,
            per_token=key.target == "fp8_rope_aware_q", ue8m0=key.target.endswith("ue8m0"),
            warps=QUANTIZE_WARPS, quantize_params=abi.QUANTIZE.signature())
    if isinstance(key, CombineKey):
        return env.get_template(COMBINE_TEMPLATE).render(
            name=key.name, is_fp16=key.out_dtype == "fp16", warp_rows=key.warp_rows, d_v=records.D_V,
            group_threads=COMBINE_GROUP_THREADS, max_groups=COMBINE_MAX_GROUPS,
            unroll=COMBINE_UNROLL, combine_params=abi.COMBINE.signature())
    if key.backend is Backend.HOPPER:
        return env.get_template(HOPPER_TEMPLATES[key.schedule]).render(
            **decode_template_values(key), mma_type=hopper_mma_type(key))
    return env.get_template(DECODE_TEMPLATE).render(**decode_template_values(key))
