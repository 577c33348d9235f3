"""``DecodeSchedule``: the work each CTA of a decode call found, kept on the device so
that the other calls of one decode step (a model's layers: the same batch, the same
lengths) read it instead of finding it again (docs/spec.md §12).

FlashMLA's ``tile_scheduler_metadata`` and FlashInfer's ``plan()`` are computed once a
step and passed to every layer; this library's kernels derive their work from the
lengths on the device, in every call (so a captured graph stays valid), which costs a
CTA ~2.5 us of prologue before its first load (the scan of the batch's lengths,
tools/results/NOTES.md session 30).  With a schedule, the first call of a step finds
the work as always and each CTA writes its record; the later calls load the record.

Which calls keep a record: the narrow and ring kernels in segment mode (docs/spec.md §7:
a share of the batch's key tiles a CTA, the walk of sequence_shares) and the dense ring
(split mode) and seesaw kernels (a CTA's split length, place and sequence: cta_split's
sums and cta_sequence's ranking over the batch).  Elsewhere a call given a schedule runs as
without one: the schedule is a cache of what a call would compute, never an input
that changes results (the same inputs give bit-identical outputs with or without it).

No CuPy import at module level (the CPU tests use it with stand-ins).
"""
from __future__ import annotations

from typing import NamedTuple

# What the decode kernels do with the ``schedule`` argument (abi.DECODE ``schedule_mode``).
FIND, WRITE, READ = 0, 1, 2     # (FIND is 0: plan.py clears the mode's slot to it)
# One CTA's record: the narrow kernel's ShareRecord (segment mode's walk and its first
# sequence's lengths), the ring's SharesWalk in segment mode, or the ring's and seesaw's
# CtaWork (kernels/common/sequence.cuh.j2's
# write_record and read_record static_assert that a record fits).
RECORD_BYTES = 64


def kernel_constants() -> str:
    """The C++ constants the decode templates are rendered with."""
    return (f"constexpr int SCHEDULE_FIND = {FIND}, SCHEDULE_WRITE = {WRITE}, SCHEDULE_READ = {READ};\n"
            f"constexpr int SCHEDULE_RECORD_BYTES = {RECORD_BYTES};")


class DecodeSchedule:
    """The work of one decode step's calls, found by the first and read by the rest.

    Pass the same schedule to every call of a step (``plan.run(..., schedule=s)``,
    ``generic_flare_mla_decode_kv_cache_ragged(..., schedule=s)``, ``mla_decode``);
    call :meth:`reset` (or make a new one) when the batch or its lengths change, as
    FlashMLA's metadata is made anew each step.  The first call after a reset finds
    the work and writes it; later calls of the same shape read it and must see the
    same ``batch_size``, ``input_row_offsets`` and ``cache_lengths`` values (not
    checked on the device: a stale schedule gives wrong results, as stale FlashMLA
    metadata does).  A call whose launch differs from the writer's (another kernel,
    grid, page size, window, or other offsets / lengths arrays) raises ValueError
    before launching.  Captured in a CUDA graph, the first captured call of a
    schedule writes at every replay and the others read.

    The device buffer is allocated by the first call that keeps records, on its
    device, and reused after a reset.
    """

    def __init__(self):
        self._buffer = None          # a device array of RECORD_BYTES a CTA, kept alive here
        self._address = self._capacity = 0
        self._device = None
        self._captured = False       # whether the writer's launch was captured in a graph
        self._writer = None          # the writing launch's ScheduleKey; None: nothing written

    def reset(self) -> None:
        """Forget the written work: the next call finds it again (a new step)."""
        self._writer = None

    @property
    def written(self) -> bool:
        return self._writer is not None

    def __repr__(self):
        return f"DecodeSchedule({'written by ' + self._writer.describe() if self._writer else 'empty'})"

    def bind(self, key: "ScheduleKey", *, capturing: bool, allocate) -> tuple[int, int]:
        """``(address, mode)`` for a launch of ``key`` on a stream that is or is not
        ``capturing`` a graph: WRITE the first time after a reset (``allocate(nbytes)``
        -> (a device array, its address), called when the buffer is missing, too small
        or on another device), READ when ``key`` wrote it in the same capture state;
        ValueError otherwise."""
        if self._writer is None:
            need = key.ctas * RECORD_BYTES
            if self._buffer is None or self._capacity < need or self._device != key.device_id:
                if capturing:
                    raise ValueError("schedule: expected its first call outside a graph capture (it "
                                     "allocates the schedule's device buffer), got one inside a capture")
                self._buffer, self._address = allocate(need)
                self._capacity, self._device = need, key.device_id
            self._writer, self._captured = key, capturing
            return self._address, WRITE
        if key != self._writer:
            raise ValueError(f"schedule: expected a call like the one that wrote it this step "
                             f"({self._writer.describe()}), got {key.describe()}; reset() it when "
                             f"the batch changes, and use one schedule a shape")
        if capturing != self._captured:
            raise ValueError(f"schedule: written {'inside' if self._captured else 'outside'} a graph "
                             f"capture, read {'inside' if capturing else 'outside'} one; reset() it before "
                             f"capturing (the graph's first call then writes it at every replay) and after")
        return self._address, READ


class ScheduleKey(NamedTuple):
    """What a schedule's records depend on besides the lengths' values: the kernel,
    its grid's CTAs, the host batch, the split length parameter, the window, the page
    size (tiles start on a TMA box of it) and the addresses of the arrays the work is
    found from."""
    device_id: int
    kernel: str
    ctas: int
    host_batch: int
    split_len: int
    window: int
    page_size: int
    # the arrays' addresses (0 in a plan's key: with_arrays fills them in at each launch)
    input_row_offsets: int
    cache_lengths: int
    scalar_args: int

    def with_arrays(self, input_row_offsets: int, cache_lengths: int, scalar_args: int) -> "ScheduleKey":
        """This key with a launch's array addresses (a plain constructor call: on the
        launch path, where ``_replace`` cost ~1 us)."""
        return ScheduleKey(*self[:-3], input_row_offsets, cache_lengths, scalar_args)

    def describe(self) -> str:
        return (f"{self.kernel} on device {self.device_id}, {self.ctas} CTAs, host batch {self.host_batch}, "
                f"split_len {self.split_len}, window {self.window}, page size {self.page_size}, input_row_offsets at "
                f"{self.input_row_offsets:#x}, cache_lengths at {self.cache_lengths:#x}, scalar_args at "
                f"{self.scalar_args:#x}")
