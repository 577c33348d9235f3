"""DecodeSchedule on the CPU (docs/spec.md §12): which launches write a schedule's
records, which read them, and the calls refused before anything is launched.
testing.stub_device records each launch's parameter slots; the GPU tests
(test_gpu_dense.py::test_schedule_*) check the kernel's records against the
reference."""
import numpy as np
import pytest

from mla_cupy import (DecodeSchedule, PagedKVCollection, ScalarArgs, abi, decode_schedule,
                      generic_flare_mla_decode_kv_cache_ragged, plan, plan_decode)
from mla_cupy.render import render
from mla_cupy.testing import FakeCudaArray as F
from mla_cupy.testing import stub_device
from mla_cupy.variants import DecodeKey

B, T = 3, 3


@pytest.fixture
def launches(monkeypatch):
    monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    monkeypatch.delenv("MLA_CUPY_HOPPER_SCHEDULE", raising=False)
    with stub_device() as recorded:
        yield recorded


def call_args(num_heads=16, kv=None, offsets=None):
    """A call the dispatcher runs in segment mode at 16 heads (the narrow kernel, its
    split to choose), the ring at 64."""
    kv = kv or PagedKVCollection(F((5, 1, 64, 576), "bfloat16"), F((B, 4), np.int32), F((B,), np.int32), 64,
                                 max_cache_length=200)
    return dict(q=F((T, num_heads, 576), "bfloat16"),
                input_row_offsets=offsets if offsets is not None else F((B + 1,), np.int32),
                kv_collection=kv, layer_idx=0, scale=0.1, output=F((T, num_heads, 512), "bfloat16"),
                scalar_args_buf=ScalarArgs(F((3,), np.int64), B, 1, 2, split_chosen=True))


def schedule_slots(launch):
    return launch.slots[abi.DECODE.slot("schedule")], launch.slots[abi.DECODE.slot("schedule_mode")]


def test_the_first_call_of_a_step_writes_and_the_others_read(launches):
    args, s = call_args(), DecodeSchedule()
    generic_flare_mla_decode_kv_cache_ragged(**args)                  # none: the CTAs find their work
    generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    decodes = launches[0::2]
    # (3 short sequences: the narrow kernel's evict_first twin, compiler.takes_evict_first)
    assert all(d.kernel_name.endswith("_m16_hopper_narrow_evict_first") and d.grid == (1, 132, 1) for d in decodes)
    (a0, m0), (a1, m1), (a2, m2) = map(schedule_slots, decodes)
    assert (a0, m0) == (0, decode_schedule.FIND)
    assert m1 == decode_schedule.WRITE and m2 == decode_schedule.READ and a1 == a2 != 0
    assert s.written and s._capacity == 132 * decode_schedule.RECORD_BYTES
    # a new step: written again, into the same buffer
    s.reset()
    generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    assert schedule_slots(launches[-2]) == (a1, decode_schedule.WRITE)
    # a plan's run takes it as the entry does; plan_decode refuses one
    p = plan_decode(**args)
    p.run(args["q"], args["output"], schedule=s)
    assert schedule_slots(launches[-2]) == (a1, decode_schedule.READ)
    p.run(args["q"], args["output"])
    assert schedule_slots(launches[-2]) == (0, decode_schedule.FIND)
    with pytest.raises(TypeError, match="schedule is an argument of plan.run"):
        plan_decode(**args, schedule=s)


def test_calls_without_records_leave_the_schedule_unwritten(launches):
    """The portable kernels keep no records: they run as without a schedule, and the
    schedule stays for the step's first call of a kernel that keeps them."""
    s = DecodeSchedule()
    args = call_args(16)
    generic_flare_mla_decode_kv_cache_ragged(**args, backend="portable", schedule=s)
    assert "_hopper" not in launches[0].kernel_name
    assert schedule_slots(launches[0]) == (0, decode_schedule.FIND) and not s.written
    generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    assert schedule_slots(launches[-2])[1] == decode_schedule.WRITE


@pytest.mark.parametrize("heads,split,suffix", [
    (64, None, "_hopper"), (96, None, "_hopper_seesaw"), (128, None, "_hopper_seesaw_multicast"),
    (128, "segments", "_hopper_seesaw_multicast_segments")])
def test_ring_and_seesaw_keep_a_record_a_cta(launches, monkeypatch, heads, split, suffix):
    """The dense ring and seesaw kernels keep each CTA's split and sequence (cta_work):
    one record a CTA of the whole grid; the seesaw's `_segments` twin (h 128 at s_q 1,
    MLA_CUPY_SPLIT=segments) one a share (a cluster's walk).  (The twin's floor of tiles a split lowered: the
    call's cache is short.)"""
    from mla_cupy import compiler
    monkeypatch.setattr(compiler, "MULTICAST_MIN_SPLIT_TILES", 1)
    if split:
        monkeypatch.setenv("MLA_CUPY_SPLIT", split)
    else:
        monkeypatch.delenv("MLA_CUPY_SPLIT", raising=False)
    s, args = DecodeSchedule(), call_args(heads)
    for _ in range(2):
        generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    decodes = launches[0::2]
    assert all(d.kernel_name.endswith(suffix) for d in decodes), [d.kernel_name for d in decodes]
    grid = decodes[0].grid
    assert [schedule_slots(d)[1] for d in decodes] == [decode_schedule.WRITE, decode_schedule.READ]
    records = grid[1] if suffix.endswith("_segments") else grid[0] * grid[1] * grid[2]
    assert s._capacity == records * decode_schedule.RECORD_BYTES


@pytest.mark.parametrize("other", ["cache_lengths", "input_row_offsets", "page_size", "grid"])
def test_a_call_unlike_the_writer_raises_before_launching(launches, other):
    args, s = call_args(), DecodeSchedule()
    generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    n = len(launches)
    kv = args["kv_collection"]
    if other == "cache_lengths":
        args = call_args(kv=PagedKVCollection(kv.blocks, kv.lookup_table, F((B,), np.int32), 64,
                                              max_cache_length=200))
    elif other == "input_row_offsets":
        args = call_args(kv=kv)
    elif other == "page_size":
        args = call_args(kv=PagedKVCollection(F((10, 1, 32, 576), "bfloat16"), F((B, 8), np.int32),
                                              kv.cache_lengths, 32, max_cache_length=200),
                         offsets=args["input_row_offsets"])
    else:   # 32 rows a sequence: the narrow kernel's 32-row tile, another kernel
        args = dict(args, q=F((T, 32, 576), "bfloat16"), output=F((T, 32, 512), "bfloat16"))
    with pytest.raises(ValueError, match="schedule: expected a call like the one that wrote it"):
        generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    assert len(launches) == n
    s.reset()                                    # a new step: any call may write it
    generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    assert schedule_slots(launches[-2])[1] == decode_schedule.WRITE


def test_graph_capture_states_must_match(launches):
    """Written outside a capture and read inside one (the graph would never write
    it), or the reverse, raises; so does a first call inside a capture (it
    allocates)."""
    args = call_args()
    s = DecodeSchedule()
    plan.stream_capturing = lambda handle: True          # (stub_device restores it)
    with pytest.raises(ValueError, match="first call outside a graph capture"):
        generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    assert not launches
    plan.stream_capturing = lambda handle: False
    generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    plan.stream_capturing = lambda handle: True
    with pytest.raises(ValueError, match="written outside a graph capture, read inside"):
        generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    s.reset()                                             # before capturing: the graph's first call writes
    generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)
    assert [schedule_slots(d)[1] for d in launches[2::2]] == [decode_schedule.WRITE, decode_schedule.READ]
    plan.stream_capturing = lambda handle: False
    with pytest.raises(ValueError, match="written inside a graph capture, read outside"):
        generic_flare_mla_decode_kv_cache_ragged(**args, schedule=s)


def test_a_schedule_of_another_type_is_refused(launches):
    with pytest.raises(TypeError, match="schedule: expected a mla_cupy.DecodeSchedule or None, got str"):
        generic_flare_mla_decode_kv_cache_ragged(**call_args(), schedule="reuse")
    assert not launches


def test_the_kernels_constants_are_the_hosts():
    """The record size and modes the narrow kernel is rendered with, and a share's
    record (its walk and first sequence) that fits one (read_record's static_assert;
    test_compile compiles it)."""
    src = render(DecodeKey(tile_rows=16, backend="hopper", schedule="narrow"))
    assert decode_schedule.kernel_constants() in src
    assert f"SCHEDULE_RECORD_BYTES = {decode_schedule.RECORD_BYTES};" in src
    assert "schedule_mode == SCHEDULE_READ" in src and "write_record(schedule, blockIdx.y, r)" in src
    assert "read_record<ShareRecord>(schedule, blockIdx.y)" in src
