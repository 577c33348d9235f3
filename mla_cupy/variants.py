"""Variant axes and the frozen keys that name every compiled kernel.

A key is what gets compiled; its canonical name is the kernel symbol, the dump
file name, the test id and the CLI argument.  All rules about which axis values
combine live here (``check``), so the dispatcher, the CLI and the tests agree.

Decode names read ``mla_decode_{layout}_{mask}_{sparse}_fold{0|1}`` followed by
suffixes for non-default compile-time shapes: ``_qk512`` (no rope part),
``_qfp8`` (e4m3 queries for the fp8 layout), ``_m16`` / ``_m32`` (rows per
tile, default 64), ``_hopper`` (the wgmma family for sm_90a), ``_seesaw`` /
``_narrow`` / ``_pair`` (its other schedules), ``_evict_first`` (the narrow
kernel's keys loaded under L2's evict_first hint, for short streams), ``_multicast``
(the seesaw's two row tiles of a token as a cluster of two CTAs, each key box read
from L2 once and multicast into both), ``_segments`` (that twin persistent: a cluster
a share of the batch's key tiles, segment mode).  Combine names read ``mla_combine_{out dtype}``; the GPU
quantisers ``mla_quantize_{target}_{input dtype}``; the checked mode's input
check is ``mla_check_inputs``.
"""
from __future__ import annotations

import dataclasses
import enum
import itertools
import re

from . import environment
from .records import D_QK, D_ROPE, D_V, ROW_BYTES, Layout, output_dtype_name  # noqa: F401 (re-exported)


class Mask(str, enum.Enum):
    NULL = "null"
    CAUSAL = "causal"
    SLIDING_WINDOW_CAUSAL = "sliding_window_causal"


class Sparsity(str, enum.Enum):
    DENSE = "dense"
    SPARSE = "sparse"


class Backend(str, enum.Enum):
    """Kernel family: ``portable`` (mma.sync, sm_80+) or ``hopper`` (wgmma,
    sm_90a; 16-bit caches, dense or sparse, 64-row tiles)."""
    PORTABLE = "portable"
    HOPPER = "hopper"



class Schedule(str, enum.Enum):
    """How a Hopper kernel walks a split's keys.  ``ring``: warpgroup 0
    computes every S and softmax over a ring of four 32-key tiles that
    warpgroup 1 loads (every variant the family covers).  ``seesaw``: the two
    warpgroups alternate 64-key tiles loaded by TMA, each computing the S and
    softmax of its own (dense bf16/fp16 caches; kernels/hopper/).  ``narrow``:
    16- or 32-row tiles with the keys as the MMA's M (S^T = K Q^T, O^T = V^T P^T),
    so the tensor cores do those rows' work instead of a padded 64-row tile's
    (dense bf16/fp16 caches by TMA; fp8 / fp8_ds_mla records, dense or sparse, through
    a producer warpgroup).  ``pair``: sparse ``fp8_ds_mla`` in clusters of two CTAs
    holding one token's slots, each gathering and dequantising half of every 64-slot
    tile into both (row groups of whole pairs of 64-row tiles)."""
    RING = "ring"
    SEESAW = "seesaw"
    NARROW = "narrow"
    PAIR = "pair"


def schedule_tile_rows(schedule: "Schedule", group_rows: int = 1) -> int:
    """Rows a CTA of a Hopper schedule holds for a row group: the narrow kernel's
    16, or 32 for a group of 17 to 32 rows (its wgmma N); 64 (wgmma M) for the others."""
    if Schedule(schedule) is Schedule.NARROW:
        return 16 if group_rows <= 16 else 32
    return 64


NARROW_TILE_ROWS = (16, 32)


TILE_ROWS = (64, 32, 16)   # rows (heads x tokens) per tile; first is the default


@dataclasses.dataclass(frozen=True)
class DecodeKey:
    """Compile-time identity of one split-KV partial kernel."""

    layout: Layout = Layout.BF16
    mask: Mask = Mask.CAUSAL
    sparsity: Sparsity = Sparsity.DENSE
    fold: bool = False
    d_qk: int = D_QK
    q_fp8: bool = False
    tile_rows: int = 64
    backend: Backend = Backend.PORTABLE
    schedule: Schedule = Schedule.RING
    # The keys' TMA copies under L2's evict_first hint (the narrow schedule over dense
    # 16-bit caches: evict_first_supports); the dispatcher picks it for short streams
    # (compiler.takes_evict_first).
    evict_first: bool = False
    # The seesaw's row tiles in clusters of two CTAs that hold rows of one token, each TMA
    # box of keys loaded once and multicast into both (multicast_supports); the dispatcher
    # picks it where every cluster's two tiles hold one token's rows and a split holds at
    # least compiler.MULTICAST_MIN_SPLIT_TILES tiles (compiler.takes_multicast).
    multicast: bool = False
    # The `_multicast` twin made persistent (segments_supports): a cluster a share of the
    # batch's 64-key tiles (segment mode, docs/spec.md section 7), its segments back to
    # back; the dispatcher picks it where segment mode applies (dispatch.segment_ctas).
    segments: bool = False

    def __post_init__(self):
        object.__setattr__(self, "backend", Backend(self.backend))
        object.__setattr__(self, "schedule", Schedule(self.schedule))
        object.__setattr__(self, "layout", Layout(self.layout))
        object.__setattr__(self, "mask", Mask(self.mask))
        object.__setattr__(self, "sparsity", Sparsity(self.sparsity))
        object.__setattr__(self, "fold", bool(self.fold))
        object.__setattr__(self, "evict_first", bool(self.evict_first))
        object.__setattr__(self, "multicast", bool(self.multicast))
        object.__setattr__(self, "segments", bool(self.segments))
        check(self)

    @property
    def name(self) -> str:
        n = (f"mla_decode_{self.layout.value}_{self.mask.value}_"
             f"{self.sparsity.value}_fold{int(self.fold)}")
        if self.d_qk != D_QK:
            n += f"_qk{self.d_qk}"
        if self.q_fp8:
            n += "_qfp8"
        if self.tile_rows != TILE_ROWS[0]:
            n += f"_m{self.tile_rows}"
        if self.backend is Backend.HOPPER:
            n += "_hopper"
        if self.schedule is not Schedule.RING:
            n += f"_{self.schedule.value}"
        if self.evict_first:
            n += "_evict_first"
        if self.multicast:
            n += "_multicast"
        if self.segments:
            n += "_segments"
        return n

    @property
    def min_sm(self) -> int:
        """wgmma exists on sm_90a alone; the portable kernels run from sm_80."""
        return 90 if self.backend is Backend.HOPPER else 80

    @property
    def row_bytes(self) -> int:
        return ROW_BYTES[(self.layout, self.d_qk)]

    def __str__(self):
        return self.name


@dataclasses.dataclass(frozen=True)
class CombineKey:
    """The LSE merge of partials: the output dtype, and whether a warp merges a row
    (``_warp_rows``, where a row's partials are few) or a CTA does."""

    out_dtype: str = "bf16"
    warp_rows: bool = False

    def __post_init__(self):
        if self.out_dtype not in ("bf16", "fp16"):
            raise ValueError(f"combine out_dtype: expected 'bf16' or 'fp16', got {self.out_dtype!r}")
        if not isinstance(self.warp_rows, bool):
            raise TypeError(f"combine warp_rows: expected a bool, got {type(self.warp_rows).__name__}")

    @property
    def name(self) -> str:
        return f"mla_combine_{self.out_dtype}" + ("_warp_rows" if self.warp_rows else "")

    def __str__(self):
        return self.name


QUANTIZE_TARGETS = ("fp8", "fp8_qk512", "fp8_rope_aware", "fp8_rope_aware_q", "fp8_ds_mla",
                    "fp8_ds_mla_ue8m0")
QUANTIZE_INPUTS = ("bf16", "fp16", "fp32")


@dataclasses.dataclass(frozen=True)
class QuantizeKey:
    """A GPU quantiser: latent rows (or rope-aware queries, ``*_q``) of one input
    dtype to one fp8 record format (``_ue8m0``: FlashMLA's power-of-two scales)."""

    target: str = "fp8_ds_mla"
    in_dtype: str = "bf16"

    def __post_init__(self):
        if self.target not in QUANTIZE_TARGETS:
            raise ValueError(f"quantize target: expected one of {QUANTIZE_TARGETS}, got {self.target!r}")
        if self.in_dtype not in QUANTIZE_INPUTS:
            raise ValueError(f"quantize input: expected one of {QUANTIZE_INPUTS}, got {self.in_dtype!r}")

    @property
    def name(self) -> str:
        return f"mla_quantize_{self.target}_{self.in_dtype}"

    @property
    def layout(self) -> Layout:
        """The record format written: fp8, fp8_rope_aware (rows and queries) or fp8_ds_mla."""
        return Layout(self.target.removesuffix("_q").removesuffix("_ue8m0").removesuffix("_qk512"))

    @property
    def d_in(self) -> int:
        """Input row width: 576, or 512 for ``fp8_qk512`` (a model without rope)."""
        return D_V if self.target.endswith("_qk512") else D_QK

    @property
    def row_bytes(self) -> int:
        return ROW_BYTES[(self.layout, self.d_in)]

    @property
    def min_sm(self) -> int:
        """cvt to e4m3 exists from sm_89 (Ada, Hopper) on."""
        return 89

    def __str__(self):
        return self.name


@dataclasses.dataclass(frozen=True)
class CheckKey:
    """The checked mode's device-side input check (kernels/check/; mla_cupy.checked)."""

    @property
    def name(self) -> str:
        return "mla_check_inputs"

    @property
    def min_sm(self) -> int:
        return 80

    def __str__(self):
        return self.name


def builds_for(key, compute_capability: int) -> bool:
    """Whether a variant's kernel runs on a device of this compute capability
    (90 for sm_90): from its ``min_sm`` on, and the wgmma family (sm_90a code)
    on sm_90 alone."""
    min_sm = getattr(key, "min_sm", 0)
    return compute_capability >= min_sm and (min_sm != 90 or compute_capability == 90)


def check(key: DecodeKey) -> None:
    """Reject combinations that have no meaning; the one place these rules live."""
    if key.fold and key.sparsity is not Sparsity.SPARSE:
        raise ValueError(f"{key.name}: fold_shared_index requires sparse mode")
    if key.sparsity is Sparsity.SPARSE and key.mask is Mask.SLIDING_WINDOW_CAUSAL:
        raise ValueError("sliding_window_causal is not supported in sparse mode; "
                         "express windows as index lists")
    if (key.layout, key.d_qk) not in ROW_BYTES:
        raise ValueError(f"layout {key.layout.value!r} does not support d_qk={key.d_qk}")
    if key.q_fp8 and key.layout is not Layout.FP8:
        raise ValueError("e4m3 queries (qfp8) exist only for the 'fp8' layout "
                         "(fp8_rope_aware queries are always its 640-byte rows)")
    if key.tile_rows not in TILE_ROWS:
        raise ValueError(f"tile_rows: expected one of {TILE_ROWS}, got {key.tile_rows}")
    if key.backend is Backend.HOPPER and not hopper_supports(key):
        raise ValueError(f"the hopper backend covers bf16/fp16 caches (dense or sparse) with 64-row tiles "
                         f"(16- or 32-row for the narrow schedule), got {key.layout.value} {key.sparsity.value} "
                         f"tile_rows={key.tile_rows} schedule={key.schedule.value}")
    if key.schedule is Schedule.SEESAW and not seesaw_supports(key):
        raise ValueError(f"the seesaw schedule is a hopper kernel of dense bf16/fp16 caches, got "
                         f"{key.backend.value} {key.layout.value} {key.sparsity.value}")
    if key.schedule is Schedule.PAIR and not pair_supports(key):
        raise ValueError(f"the pair schedule is a hopper kernel of sparse, unfolded fp8_ds_mla caches, got "
                         f"{key.backend.value} {key.layout.value} {key.sparsity.value} fold={key.fold}")
    if key.schedule is Schedule.NARROW and not narrow_supports(key):
        raise ValueError(f"the narrow schedule is a hopper kernel of dense bf16/fp16/fp8/fp8_ds_mla caches, got "
                         f"{key.backend.value} {key.layout.value} {key.sparsity.value}")
    if key.evict_first and not evict_first_supports(key):
        raise ValueError(f"evict_first: the narrow schedule's TMA copies of dense bf16/fp16 caches carry the hint, "
                         f"got {key.backend.value} {key.schedule.value} {key.layout.value} {key.sparsity.value}")
    if key.multicast and not multicast_supports(key):
        raise ValueError(f"multicast: the seesaw schedule's TMA copies of dense bf16/fp16 caches are multicast, "
                         f"got {key.backend.value} {key.schedule.value} {key.layout.value} {key.sparsity.value}")
    if key.segments and not segments_supports(key):
        raise ValueError(f"segments: the seesaw's `_multicast` twin has segment mode at D_QK {D_QK} with the null or "
                         f"causal mask, got multicast={key.multicast} d_qk={key.d_qk} mask {key.mask.value}")


BACKENDS = ("auto", "portable", "hopper")


def resolve_backend(backend=None) -> str:
    """The requested kernel family: the argument, else MLA_CUPY_BACKEND, else
    ``"auto"`` (Hopper kernels on sm_90 where they apply, portable elsewhere)."""
    if backend is None:
        backend = environment.get(environment.BACKEND) or "auto"
    if not isinstance(backend, str) or backend not in BACKENDS:
        raise ValueError(f"backend: expected one of {BACKENDS} (argument or MLA_CUPY_BACKEND), "
                         f"got {backend!r}")
    return backend


# Byte-record layouts the wgmma family reads, dequantised to bf16 by its producer
# warpgroup (bf16 queries; e4m3 queries stay portable).
HOPPER_BYTE_LAYOUTS = (Layout.FP8, Layout.FP8_DS_MLA)


def hopper_supports(key: DecodeKey) -> bool:
    """Which variants the wgmma family implements (the rest stay portable)."""
    return (key.layout in (Layout.BF16, Layout.FP16, *HOPPER_BYTE_LAYOUTS)
            and (key.tile_rows in NARROW_TILE_ROWS if key.schedule is Schedule.NARROW else key.tile_rows == 64)
            and not key.q_fp8)


def seesaw_supports(key: DecodeKey) -> bool:
    """Which Hopper variants the seesaw schedule implements."""
    return (key.backend is Backend.HOPPER and key.sparsity is Sparsity.DENSE
            and key.layout in (Layout.BF16, Layout.FP16))


def narrow_supports(key: DecodeKey) -> bool:
    """Which Hopper variants the narrow schedule implements: dense 16-bit caches
    (loaded by TMA), and fp8 / fp8_ds_mla with bf16 queries, dense or sparse (a
    producer warpgroup copies and dequantises their records)."""
    records = key.layout in HOPPER_BYTE_LAYOUTS
    return (key.backend is Backend.HOPPER and not key.q_fp8
            and (records or (key.sparsity is Sparsity.DENSE and key.layout in (Layout.BF16, Layout.FP16))))


def evict_first_supports(key: DecodeKey) -> bool:
    """Which Hopper variants have an ``_evict_first`` twin: the narrow schedule over dense
    16-bit caches, whose loading warp copies the keys by TMA."""
    return (key.backend is Backend.HOPPER and key.schedule is Schedule.NARROW
            and key.sparsity is Sparsity.DENSE and key.layout in (Layout.BF16, Layout.FP16))


def multicast_supports(key: DecodeKey) -> bool:
    """Which Hopper variants have a ``_multicast`` twin: the seesaw (dense 16-bit caches,
    whose loading warpgroup copies the keys by TMA)."""
    return key.schedule is Schedule.SEESAW and seesaw_supports(key)


def segments_supports(key: DecodeKey) -> bool:
    """Which Hopper variants have a ``_segments`` twin (persistent, segment mode): the
    seesaw's ``_multicast`` twin at D_QK 576 (its epilogue staged over the tile buffers,
    so the next segment's Q loads under it) with the null or causal mask."""
    return (key.multicast and multicast_supports(key) and key.d_qk == D_QK
            and key.mask in (Mask.NULL, Mask.CAUSAL))


def pair_supports(key: DecodeKey) -> bool:
    """Which Hopper variants the pair schedule implements: sparse fp8_ds_mla records
    with bf16 queries, one token a row group (unfolded)."""
    return (key.backend is Backend.HOPPER and key.sparsity is Sparsity.SPARSE
            and key.layout is Layout.FP8_DS_MLA and not key.fold and not key.q_fp8)


_DECODE_RE = re.compile(
    r"mla_decode_(?P<layout>{l})_(?P<mask>{m})_(?P<sparsity>{s})_fold(?P<fold>[01])"
    r"(?:_qk(?P<d_qk>512))?(?P<qfp8>_qfp8)?(?:_m(?P<tile>\d+))?(?P<hopper>_hopper)?(?:_(?P<schedule>seesaw|narrow|pair))?(?P<evict_first>_evict_first)?(?P<multicast>_multicast)?(?P<segments>_segments)?".format(
        l="|".join(sorted((x.value for x in Layout), key=len, reverse=True)),
        m="|".join(x.value for x in Mask),
        s="|".join(x.value for x in Sparsity)))
_COMBINE_RE = re.compile(r"mla_combine_(?P<dtype>bf16|fp16)(?P<warp_rows>_warp_rows)?")
_QUANTIZE_RE = re.compile(r"mla_quantize_(?P<target>{t})_(?P<in_dtype>{i})".format(
    t="|".join(sorted(QUANTIZE_TARGETS, key=len, reverse=True)), i="|".join(QUANTIZE_INPUTS)))


def parse(name: str) -> DecodeKey | CombineKey | QuantizeKey | CheckKey:
    """Inverse of ``.name``; raises ValueError naming the bad part."""
    m = _DECODE_RE.fullmatch(name)
    if m:
        key = DecodeKey(layout=m["layout"], mask=m["mask"], sparsity=m["sparsity"],
                        fold=m["fold"] == "1", d_qk=int(m["d_qk"] or D_QK),
                        q_fp8=bool(m["qfp8"]), tile_rows=int(m["tile"] or TILE_ROWS[0]),
                        backend=Backend.HOPPER if m["hopper"] else Backend.PORTABLE,
                        schedule=Schedule(m["schedule"] or Schedule.RING.value),
                        evict_first=bool(m["evict_first"]), multicast=bool(m["multicast"]),
                        segments=bool(m["segments"]))
        if key.name != name:  # e.g. an explicit default suffix such as _m64
            raise ValueError(f"variant {name!r} is not canonical; did you mean {key.name!r}?")
        return key
    m = _COMBINE_RE.fullmatch(name)
    if m:
        return CombineKey(m["dtype"], bool(m["warp_rows"]))
    m = _QUANTIZE_RE.fullmatch(name)
    if m:
        return QuantizeKey(m["target"], m["in_dtype"])
    if name == CheckKey().name:
        return CheckKey()
    raise ValueError(f"unknown variant name {name!r}; `mla-cupy list` prints every name")


def all_variants() -> list[DecodeKey | CombineKey | QuantizeKey]:
    """Every valid key in a stable order (decode, combine, quantise kernels, then the input check)."""
    keys: list = []
    for backend, schedule, layout, mask, sparsity, fold, d_qk, q_fp8, rows, evict_first, multicast, segments in \
            itertools.product(Backend, Schedule, Layout, Mask, Sparsity, (False, True), (D_QK, D_V), (False, True),
                              TILE_ROWS, (False, True), (False, True), (False, True)):
        try:
            key = DecodeKey(layout, mask, sparsity, fold, d_qk, q_fp8, rows, backend, schedule, evict_first,
                            multicast, segments)
        except ValueError:
            continue
        keys.append(key)
    keys += [CombineKey(d, w) for w in (False, True) for d in ("bf16", "fp16")]
    keys += [QuantizeKey(t, i) for t in QUANTIZE_TARGETS for i in QUANTIZE_INPUTS]
    keys.append(CheckKey())
    return keys
