"""NVRTC compilation through CuPy.

``get_kernel`` compiles through CuPy's RawKernel, so CuPy's disk cache (keyed on
the full source, options, arch and NVRTC version) is the only cache; this
module adds just an in-process memo per (variant, device).  ``compile_offline``
drives ``cupy.cuda.nvrtc`` directly so that the CLI and CI can compile and read
ptxas's resource report on a machine without a GPU.
"""
from __future__ import annotations

import dataclasses
import functools
import os
import re
import tempfile
import threading

from . import environment
from .render import HOPPER_TILES, launch_config, render, tma_raw_records
from .schedule import H200_SMEM_PER_SM, ctas_per_sm
from .tensor_map import box_rows, raw_box_rows
from .variants import (HOPPER_BYTE_LAYOUTS, TILE_ROWS, Backend, CombineKey, DecodeKey, Layout, Schedule, Sparsity,
                       NARROW_TILE_ROWS, evict_first_supports, hopper_supports, multicast_supports, narrow_supports,
                       pair_supports, parse,
                       resolve_backend, schedule_tile_rows, seesaw_supports)

BASE_OPTIONS = ("-std=c++17",)


class KernelCompileError(RuntimeError):
    """A variant failed to compile; carries its name, the whole NVRTC log and
    the dumped source: ``source_path`` (the latest failure of the variant)
    and ``kept_path`` (a numbered copy no later failure overwrites)."""

    def __init__(self, name: str, log: str, source_path: str, kept_path: str | None = None):
        self.name, self.log, self.source_path, self.kept_path = name, log, source_path, kept_path
        kept = f", kept as {kept_path}" if kept_path else ""
        super().__init__(f"{name} failed to compile (rendered source: {source_path}{kept})\n"
                         f"{log.rstrip()}")


@dataclasses.dataclass(frozen=True)
class Resources:
    """ptxas's report for one kernel (``-Xptxas=-v``)."""

    name: str
    arch: str
    registers: int
    static_smem: int
    dynamic_smem: int
    stack_frame: int
    spill_stores: int
    spill_loads: int
    log: str

    @property
    def smem(self) -> int:
        """Shared memory one block needs: what the per-block limit applies to."""
        return self.static_smem + self.dynamic_smem

    def line(self) -> str:
        return (f"{self.name:48s} {self.arch:7s} regs={self.registers:3d} "
                f"smem={self.smem:6d}B stack={self.stack_frame}B "
                f"spill_st={self.spill_stores}B spill_ld={self.spill_loads}B")


def dump_dir() -> str:
    """Where rendered sources go on a compile error (MLA_CUPY_DUMP_DIR overrides)."""
    return environment.get(environment.DUMP_DIR) or os.path.join(tempfile.gettempdir(), "mla_cupy")


def _dump_source(name: str, source: str) -> tuple[str, str]:
    """Write the source NVRTC saw, unchanged, so the log's line numbers point
    into it and ``nvcc -c`` compiles it: to ``NAME.cu`` (the latest failure, a
    stable path to reopen) and to the first free ``NAME.<n>.cu`` (kept, so
    successive failures of an edit loop can be compared)."""
    folder = dump_dir()
    os.makedirs(folder, exist_ok=True)
    path = os.path.join(folder, f"{name}.cu")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    n = 1
    while True:
        kept = os.path.join(folder, f"{name}.{n}.cu")
        try:
            fd = os.open(kept, os.O_WRONLY | os.O_CREAT | os.O_EXCL, 0o644)
        except FileExistsError:
            n += 1
            continue
        with os.fdopen(fd, "w", encoding="utf-8") as f:
            f.write(source)
        return path, kept


def _as_key(key: DecodeKey | CombineKey | str) -> DecodeKey | CombineKey:
    return parse(key) if isinstance(key, str) else key


def _dynamic_smem(key) -> int:
    return launch_config(key).smem_bytes if isinstance(key, DecodeKey) else 0


def _nvrtc_include_dir() -> str | None:
    """CUDA headers matching the NVRTC in use (nvidia-cuda-runtime wheels); our
    sources include none, but user-added options may."""
    try:
        import nvidia.cuda_runtime as rt  # type: ignore
    except ImportError:
        return None
    inc = os.path.join(list(rt.__path__)[0], "include")
    return inc if os.path.isdir(inc) else None


MIN_SM = 80   # mma.sync on bf16 and cp.async
# Shared memory one block may opt in to, by compute capability (CUDA
# programming guide, "Technical Specifications per Compute Capability").
SMEM_PER_BLOCK_OPTIN = {80: 166912, 86: 101376, 87: 166912, 89: 101376, 90: 232448,
                        100: 232448, 101: 232448, 103: 232448, 110: 232448,
                        120: 101376, 121: 101376}
_ARCH_FORMS = "sm_90a, sm_90, compute_90, 90 or 9.0"
_RE_ARCH = re.compile(r"(?:(sm|compute)_)?(\d{2,3})(a?)|(\d{1,2})\.(\d)")


def parse_arch(text, name: str = "arch") -> str:
    """An NVRTC cubin target (``sm_XY`` or ``sm_XYa``) from the ways people
    write one: ``sm_90a``, ``sm_90``, ``compute_90`` (compiled to a cubin all
    the same, so ptxas reports resources), and a compute capability ``90`` or
    ``9.0``, which gets the target a device of that capability compiles for
    (:func:`arch_for_capability`)."""
    if isinstance(text, int) and not isinstance(text, bool):
        text = str(text)
    m = _RE_ARCH.fullmatch(text.strip().lower()) if isinstance(text, str) else None
    supported = _supported_sms()
    listed = ", ".join(f"sm_{n}" for n in supported if n >= MIN_SM)
    if m is None:
        raise ValueError(f"{name}: expected a GPU target such as {_ARCH_FORMS}, got {text!r}")
    if m[4] is not None:
        cc, suffix, bare = int(m[4]) * 10 + int(m[5]), "", True
    else:
        cc, suffix, bare = int(m[2]), m[3], m[1] is None
    if cc < MIN_SM or cc not in supported:
        raise ValueError(f"{name}: expected a target from sm_{MIN_SM} on that this NVRTC "
                         f"supports ({listed}), got {text!r}")
    if suffix and cc < 90:
        raise ValueError(f"{name}: expected the 'a' suffix only from sm_90 on "
                         f"(architecture-specific targets), got {text!r}")
    return arch_for_capability(cc) if bare and not suffix else f"sm_{cc}{suffix}"


def arch_number(arch: str) -> int:
    """90 for sm_90a (an output of :func:`parse_arch`)."""
    return int(arch[3:].rstrip("a"))


def smem_limit(arch: str) -> int | None:
    """Shared memory per block a target's devices allow (None: not in the table)."""
    return SMEM_PER_BLOCK_OPTIN.get(arch_number(arch))


@functools.lru_cache(maxsize=1)
def _supported_sms() -> tuple[int, ...]:
    from cupy.cuda import nvrtc
    try:
        return tuple(int(n) for n in nvrtc.getSupportedArchs())
    except (AttributeError, nvrtc.NVRTCError):   # NVRTC before 11.2 cannot list them
        return tuple(sorted(SMEM_PER_BLOCK_OPTIN))


def compile_offline(key: DecodeKey | CombineKey | str, arch: str = "sm_90a") -> Resources:
    """Compile to a cubin with NVRTC, without a GPU; return ptxas's resources.
    ``arch`` takes any form :func:`parse_arch` reads."""
    key = _as_key(key)
    arch = parse_arch(arch)
    _, log = _nvrtc_cubin(key, arch, ["-Xptxas=-v"])
    return parse_ptxas_log(key, arch, log)


def compile_cubin(key: DecodeKey | CombineKey | str, arch: str = "sm_90a") -> bytes:
    """The cubin NVRTC makes of a variant, without a GPU (the options of
    :func:`compile_offline` minus the resource report)."""
    key = _as_key(key)
    return _nvrtc_cubin(key, parse_arch(arch), [])[0]


def _nvrtc_cubin(key, arch: str, extra: list) -> tuple[bytes, str]:
    from cupy.cuda import nvrtc

    source = render(key)
    options = [*BASE_OPTIONS, f"-arch={arch}", *extra, "-ftz=true"]
    inc = _nvrtc_include_dir()
    if inc:
        options.append(f"-I{inc}")
    prog = nvrtc.createProgram(source, f"{key.name}.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, options)
        except nvrtc.NVRTCError:
            log = nvrtc.getProgramLog(prog)
            raise KernelCompileError(key.name, log, *_dump_source(key.name, source)) from None
        return nvrtc.getCUBIN(prog), nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


_RE_REGS = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")
_RE_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas_log(key, arch: str, log: str) -> Resources:
    regs = _RE_REGS.search(log)
    frame = _RE_FRAME.search(log)
    if not regs or not frame:
        raise RuntimeError(f"{key.name}: no ptxas resource report in the NVRTC log:\n{log}")
    smem = _RE_SMEM.search(log)
    return Resources(key.name, arch, int(regs.group(1)), int(smem.group(1)) if smem else 0,
                     _dynamic_smem(key), int(frame.group(1)), int(frame.group(2)),
                     int(frame.group(3)), log)


_memo: dict = {}
_memo_lock = threading.Lock()


def arch_for_capability(cc: int) -> str:
    """The target a device of compute capability ``cc`` (e.g. 90) compiles
    for: 9.0 gets sm_90a so Hopper-only instructions (wgmma, setmaxnreg) are
    available to the kernels."""
    return f"sm_{cc}a" if cc == 90 else f"sm_{cc}"


@functools.lru_cache(maxsize=None)
def device_arch(device_id: int) -> str:
    """Exact architecture of a device (:func:`arch_for_capability`)."""
    import cupy

    return arch_for_capability(int(cupy.cuda.Device(device_id).compute_capability))


def runs_hopper(key: DecodeKey, device_id: int, backend=None) -> bool:
    """Whether a call of ``key``'s variant on ``device_id`` runs the Hopper (wgmma)
    family: backend auto or hopper (None reads MLA_CUPY_BACKEND), an sm_90
    device and a variant the family covers, at any row count.  The one rule for the
    dispatcher's choice and for the split pack_scalar_args plans.
    (H200, b128: small row groups measured faster on Hopper for every variant: dense
    fp8_ds_mla h8 449.9 vs portable 506.1 us, sparse top-2048 bf16 h4 97.5 vs 129.2 and
    fp8_ds_mla h4 113.3 vs 158.0 at 0c73aee; the last portable window, dense `fp8` at
    17-31 rows, went to the narrow 32-row tile in session 27: h24 s8192 625 -> 310 us.)"""
    chosen = resolve_backend(backend)
    if chosen == "portable" or not hopper_supports(dataclasses.replace(key, tile_rows=64)):
        return False
    return device_arch(device_id) == "sm_90a"


# The seesaw runs by default when a sequence's row group (all its tokens'
# heads) spans more than one 64-row tile: its CTAs then share each cache row
# through L2 and the kernel is bound by the MMAs, where the seesaw keeps the
# tensor cores busier.  With one tile or less it is bound by loads, and the
# ring's four buffers keep more of them in flight (H200, bf16 page 64, b128
# s8192: h128 548 us seesaw vs 636 ring; h64 362 vs 350; h32 360 vs 340;
# h16 342 vs 334).
SEESAW_MIN_ROWS = 65
# The narrow schedule's CTA holds 16 or 32 rows (its wgmma N): one token's heads at
# h <= 16, two tokens' or 32 heads.  It does those rows' MMA work instead of a padded
# 64-row tile's, and runs by default wherever it applies and was measured faster
# (H200, page 64, ring -> narrow in the same run; tools/results/NOTES.md sessions 11,
# 12):
# - 16-bit caches up to 16 rows: b128 h16 s8192 325.5 -> 310.5 us, b8 h16 41.6 ->
#   39.1, ds_h16_sq1 ragged 315.6 -> 243.8.  Their 17-32-row groups went back to the ring
#   in session 32, whose 64-row tile (padded) then beat the 32-row narrow tile
#   (forced ring against auto, two rounds, page 64 bf16 causal unless said, us): ds_h32_sq1
#   uniform 167.4 vs 173.0, ragged 187.8 vs 190.7, ds_h16_sq2 uniform 167.1 vs 173.5, ragged
#   188.2 vs 190.0, b128 h24 s8192 303.8 vs 327.0, b64 h32 fp16 170.9 vs 178.0, b64 h32
#   page 16 ragged 189.3 vs 214.6; the narrow tile kept b8 h32 s8192 (45.5 vs 46.1) and b1
#   h32 s32768 (35.6 vs 36.2): 1.5% on short splits against 1-12% elsewhere.
# - dense fp8 records up to 16 rows (the producer warpgroup dequantises them):
#   fp8_ds_mla b128 h16 367.8 -> 356.1, fp8 (portable before) 399.5 -> 373.9; and up to
#   32 (session 27, d29a4fb, b128 s8192, auto -> narrow, each checked against the
#   reference first): fp8 h24 625.2 (portable) -> 309.9, h32 347.8 (ring) -> 305.8;
#   fp8_ds_mla h24 372.6 (ring) -> 351.8, h32 372.0 -> 345.8.
# Sparse fp8_ds_mla records in row groups of 16 or fewer run it too, since its math applies
# their group scales (render.narrow_math_scales; session 28 call 5, s_q1 top-2048 unless
# said, ring -> narrow in one run, us: b128 h16 104.3 -> 101.4, b128 h16 top-4096 195.4 ->
# 183.2, b128 h8 107.6 -> 101.1, b2 h16 17.5 -> 17.4; b32 h16 (4 splits) 38.3 -> 41.2, the
# one loss).  Sparse `fp8` records too (b128 h16 narrow 96.6 vs ring 100.9, session 29
# call 1 and 4).  Both only where a split holds NARROW_SPARSE_MIN_SPLIT_KEYS keys or more:
# the narrow kernel's fixed cost a CTA is the larger (session 29 call 2, fp8_ds_mla h16
# top-2048 split sweeps, narrow vs ring, us: b32 P=4 (512 keys a split) 40.8 vs 38.7, b64
# P=2 (1024) 62.8 vs 61.5; b128 P=1 (2048) 101.4 vs 104.3 in call 5 of session 28).  With
# the rule (call 4, auto / ring / narrow, us): fp8_ds_mla b32 38.3 / 38.1 / 40.7, b64
# 60.9 / 60.8 / 62.8, b128 101.3 / 104.9 / 101.8; fp8 b32 36.9 / 37.2 / 38.6, b64
# 59.4 / 58.7 / 60.4, b128 97.2 / 100.7 / 97.3.
# Since session 46 row groups of 17-32 rows too: the 32-row tile's two math warpgroups split
# each tile's columns (render.narrow_features; H100, one call, ring (auto) / the 32-row
# producer form / the features split, us: fp8_ds_mla b128 top-2048 h32 109.9 / 152.3 / 102.0,
# folded s_q 2 h16 110.2 / 151.0 / 102.0; tools/results/2026-12-05_session46/).
# Sparse bf16 rows run the ring (the narrow kernel reads 16-bit caches by TMA boxes only).
NARROW_MAX_ROWS = max(NARROW_TILE_ROWS)
NARROW_AUTO_ROWS = 16                  # dense 16-bit caches
NARROW_AUTO_RECORD_ROWS = 32           # dense fp8 records
NARROW_AUTO_SPARSE_ROWS = 32
NARROW_SPARSE_MIN_SPLIT_KEYS = 2048


def narrow_auto_rows(key: DecodeKey, split_keys: int | None = None) -> int:
    """The row groups ``auto`` gives the narrow schedule, at most: NARROW_AUTO_ROWS for dense
    16-bit caches, NARROW_AUTO_RECORD_ROWS for dense fp8 records, NARROW_AUTO_SPARSE_ROWS
    for sparse fp8 records whose splits hold
    NARROW_SPARSE_MIN_SPLIT_KEYS keys or more (``split_keys``: the most keys a split of
    the call holds; None when no call is planned, as for the CLI's variant lists), none
    (0) for other sparse calls."""
    if key.sparsity is Sparsity.DENSE:
        return NARROW_AUTO_RECORD_ROWS if key.layout in HOPPER_BYTE_LAYOUTS else NARROW_AUTO_ROWS
    if key.layout not in (Layout.FP8_DS_MLA, Layout.FP8):
        return 0
    if split_keys is not None and split_keys < NARROW_SPARSE_MIN_SPLIT_KEYS:
        return 0
    return NARROW_AUTO_SPARSE_ROWS
# The pair schedule's row groups: whole pairs of 64-row tiles (its clusters of two
# CTAs hold one token's slots).
PAIR_ROWS = 128
HOPPER_SCHEDULES = ("auto",) + tuple(s.value for s in Schedule)


def hopper_schedule_choice() -> str:
    """MLA_CUPY_HOPPER_SCHEDULE, checked (``auto`` when unset)."""
    chosen = environment.get(environment.HOPPER_SCHEDULE) or "auto"
    if chosen not in HOPPER_SCHEDULES:
        raise ValueError(f"MLA_CUPY_HOPPER_SCHEDULE: expected one of {HOPPER_SCHEDULES}, got {chosen!r}")
    return chosen


def takes_pair(key: DecodeKey, group_rows: int) -> bool:
    """Whether a Hopper call of ``key`` (any backend field) runs the pair schedule:
    sparse unfolded fp8_ds_mla in row groups of whole pairs of 64-row tiles, under
    ``auto`` or ``pair``.  The one rule for choose_hopper_schedule and for the split
    pack_scalar_args plans (the pair's tiles are 64 slots)."""
    return (hopper_schedule_choice() in ("auto", "pair")
            and pair_supports(dataclasses.replace(key, backend=Backend.HOPPER)) and group_rows % PAIR_ROWS == 0)


def choose_hopper_schedule(key: DecodeKey, page_size: int, group_rows: int,
                           split_keys: int | None = None) -> Schedule:
    """The schedule of a Hopper call (``key.backend`` is HOPPER): MLA_CUPY_HOPPER_SCHEDULE
    (``auto``, the default; ``ring``; ``seesaw``; ``narrow``), where ``auto`` takes the
    narrow schedule for dense bf16/fp16 caches whose pages TMA can load
    (tensor_map.box_rows) in row groups of NARROW_AUTO_ROWS or fewer, for dense fp8
    records (any page size) in row groups of NARROW_AUTO_RECORD_ROWS or fewer, and for
    sparse fp8_ds_mla in row groups of NARROW_AUTO_SPARSE_ROWS or fewer when a split
    holds enough keys (``split_keys``, narrow_auto_rows),
    and the seesaw for row groups of SEESAW_MIN_ROWS or more (with
    batch_invariant the dispatcher passes one token's heads, which no batch
    changes: the two schedules round differently).  A forced
    ``seesaw`` applies to the variants it implements; on a page size TMA
    cannot load the launch reports it (tensor_map.KvMapSource).  A forced
    ``narrow`` applies to the variants it implements, row groups of at most
    NARROW_MAX_ROWS and page sizes TMA can load; the ring runs the others.  Sparse
    unfolded fp8_ds_mla calls in row groups of whole pairs of 64-row tiles (PAIR_ROWS)
    take the pair schedule under ``auto`` and ``pair`` (H200, b128 h128 top-2048: ring
    220.3 us, pair 191.8 in one run; the pair 179.1 against FlashMLA's 181.0 since;
    NOTES.md sessions 22-23)."""
    chosen = hopper_schedule_choice()
    if takes_pair(key, group_rows):
        return Schedule.PAIR
    possible = seesaw_supports(key)
    byte_records = key.layout in HOPPER_BYTE_LAYOUTS   # bulk copies of the records: any page size
    # (dense `fp8` rows: TMA boxes of whole pages, render.narrow_tma_raw)
    loadable = (raw_box_rows(page_size, HOPPER_TILES[Schedule.NARROW][0]) > 0 if tma_raw_records(key)
                else byte_records or box_rows(page_size) > 0)
    narrow = narrow_supports(key) and loadable and group_rows <= NARROW_MAX_ROWS
    if chosen == "auto":
        if narrow and group_rows <= narrow_auto_rows(key, split_keys):
            return Schedule.NARROW
        return (Schedule.SEESAW if possible and box_rows(page_size) > 0 and group_rows >= SEESAW_MIN_ROWS
                else Schedule.RING)
    if chosen == "narrow":
        return Schedule.NARROW if narrow else Schedule.RING
    return Schedule.SEESAW if chosen == "seesaw" and possible else Schedule.RING


# A segment-mode share of at most this many 64-key tiles runs the narrow kernel's
# `_evict_first` twin.  H200, session 35 (tools/results/NOTES.md), the hint against none,
# two rounds each: b8 h16 s8192 (8 tiles a share) 40.0 -> 36.1 us, b16 (16 tiles) 61.8 ->
# 59.1, b32 (31) 95.9 -> 98.3, b128 h16 305 -> 314, DeepSeek h16 uniform (64) 163.5 -> 170.6.
# The twin under this rule (session 36 call 1): b8 39.8 -> 36.2, b16 62.0 -> 59.4, the rest
# on the plain kernel, unchanged.
EVICT_FIRST_MAX_SHARE_TILES = 16


def takes_evict_first(key: DecodeKey, segments: int, host_batch: int, max_keys: int) -> bool:
    """Whether a call of ``key`` runs its ``_evict_first`` twin: a narrow kernel over a
    dense 16-bit cache (variants.evict_first_supports) in segment mode (``segments``
    shares) whose shares hold at most EVICT_FIRST_MAX_SHARE_TILES tiles, bounded on the
    host by ``host_batch`` sequences of at most ``max_keys`` keys each (the cache's
    max_cache_length + q_max_seq_len).  A bound above the truth only keeps the plain
    kernel; the hint changes no result."""
    if not segments or not evict_first_supports(key):
        return False
    block_n = launch_config(key).block_n
    tiles = host_batch * -(-max_keys // block_n)
    return -(-tiles // segments) <= EVICT_FIRST_MAX_SHARE_TILES


# A split of fewer 64-key tiles than this runs the plain seesaw, not its `_multicast` twin:
# a cluster's start and end (a cluster barrier each, the pair's CTAs held to the slower one)
# are paid once a split.  H200, session 38 (tools/results/NOTES.md), plain / twin, two rounds
# each, us: b128 h128 s8192 (P=1, 128 tiles a split) 455.6 -> 445.0, DeepSeek h128 uniform
# 236.6 -> 233.7, ragged 275.5 -> 271.7, varlen s_q 2 937 -> 918.7, b32 h128 s4096 (P=2,
# 32 tiles) 79.6 -> 79.8, b1 h128 s65536 (P=64, 16 tiles) 51.9 -> 54.3.
MULTICAST_MIN_SPLIT_TILES = 32


def takes_multicast(key: DecodeKey, num_heads: int, num_partitions: int, max_keys: int) -> bool:
    """Whether a call of ``key`` runs its ``_multicast`` twin (variants.multicast_supports):
    the seesaw where every cluster of two row tiles holds rows of one token, i.e. a token's
    heads fill whole pairs of 64-row tiles, and a split of the host's ``num_partitions``
    over a sequence of ``max_keys`` keys (the cache's max_cache_length + q_max_seq_len)
    holds at least MULTICAST_MIN_SPLIT_TILES tiles.  Both CTAs of a cluster walk the same
    keys and start, stay or leave together, which the twin's shared copies need (its
    grid's row tiles come in pairs: a group's rows are whole tokens).  The twin changes
    no result."""
    if not multicast_supports(key) or num_heads % (2 * key.tile_rows):
        return False
    block_n = launch_config(key).block_n
    return -(-max_keys // (num_partitions * block_n)) >= MULTICAST_MIN_SPLIT_TILES


def hopper_key(key: DecodeKey, page_size: int, group_rows: int, split_keys: int | None = None) -> DecodeKey:
    """``key`` on the Hopper family with the schedule choose_hopper_schedule picks
    and that schedule's rows a CTA."""
    schedule = choose_hopper_schedule(dataclasses.replace(key, backend=Backend.HOPPER), page_size, group_rows,
                                      split_keys)
    return dataclasses.replace(key, backend=Backend.HOPPER, schedule=schedule,
                               tile_rows=schedule_tile_rows(schedule, group_rows))


def resident_ctas(layout: str = "bf16", d_qk: int = 576,
                  device_id: int | None = None) -> dict[int, int]:
    """CTAs per SM of each decode tile (rows -> count, 0: does not fit) of a
    layout on a device, for ``choose_num_partitions``; the current device
    when None, and an H200 without a GPU (as the SM count falls back)."""
    smem_per_sm = H200_SMEM_PER_SM
    try:
        from cupy.cuda import runtime
        smem_per_sm = _smem_per_sm(runtime.getDevice() if device_id is None else device_id)
    except Exception:   # no GPU or driver (CPU tests, CLI)
        pass
    try:
        layout = Layout(layout)
    except ValueError:
        raise ValueError(f"layout: expected one of {[x.value for x in Layout]}, got {layout!r}") from None
    return dict(_resident_ctas(layout, d_qk, smem_per_sm))   # a copy: the memo stays intact


@functools.lru_cache(maxsize=None)
def _smem_per_sm(device_id: int) -> int:
    from cupy.cuda import runtime
    return int(runtime.deviceGetAttribute(runtime.cudaDevAttrMaxSharedMemoryPerMultiprocessor,
                                          device_id))


@functools.lru_cache(maxsize=None)
def _resident_ctas(layout: Layout, d_qk: int, smem_per_sm: int) -> dict[int, int]:
    return {rows: ctas_per_sm(launch_config(DecodeKey(layout=layout, d_qk=d_qk, tile_rows=rows))
                              .smem_bytes, smem_per_sm)
            for rows in TILE_ROWS}


def get_kernel(key: DecodeKey | CombineKey | str, device_id: int | None = None):
    """The compiled ``cupy.RawKernel`` of a variant on a device (memoised)."""
    import cupy

    key = _as_key(key)
    if device_id is None:
        device_id = cupy.cuda.runtime.getDevice()
    memo_key = (key.name, device_id)
    kernel = _memo.get(memo_key)
    if kernel is not None:
        return kernel
    with _memo_lock:
        kernel = _memo.get(memo_key)
        if kernel is None:
            source = render(key)
            # CuPy appends its own -arch=sm_XY; NVRTC keeps the architecture-
            # specific 'a' target when both are given.
            options = (*BASE_OPTIONS, f"-arch={device_arch(device_id)}")
            with cupy.cuda.Device(device_id):
                kernel = cupy.RawKernel(source, key.name, options=options, backend="nvrtc")
                try:
                    kernel.compile()
                except cupy.cuda.compiler.CompileException as e:
                    raise KernelCompileError(key.name, str(e), *_dump_source(key.name, source)) from None
                smem = _dynamic_smem(key)
                if smem > 48 * 1024:
                    kernel.max_dynamic_shared_size_bytes = smem
            _memo[memo_key] = kernel
    return kernel
