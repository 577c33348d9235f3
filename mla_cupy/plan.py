"""``DecodePlan``: a call of the decode kernels validated and resolved once, then
launched with a few pointer compares and one driver call per kernel
(docs/spec.md §12).

A plan holds what ``generic_flare_mla_decode_kv_cache_ragged`` works out per
call: the variant and its compiled kernels, grid, block and shared memory,
``num_partitions``, the split-KV workspace, and each kernel's parameters packed
once into 8-byte slots (:meth:`mla_cupy.abi.Abi.pack_slots`) whose addresses go
to ``cuLaunchKernel``.  :meth:`DecodePlan.run` compares the per-call arrays (q,
output, lse) with the planned ones, writes their three addresses into the slots
and launches: nothing is converted, allocated, synchronised or copied.

The entry points use the same plans (``dispatch``): a plan built for one set of
array signatures (dtype, shape, contiguity, device: what validation reads) is
memoised, and each call writes every array's address before launching.

No CuPy import at module level (the CPU tests build plans with stand-ins).
"""
from __future__ import annotations

import array
import ctypes
import sys
import threading

from . import abi, decode_schedule, driver, environment
from .arrays import dtype_name, is_cupy_type
from .validate import _device_of, _is_c_contiguous

# ABI names of a call's device arrays, in the order the entry points gather
# their addresses; the first three are what DecodePlan.run takes per call.
ARRAY_PARAMS = ("q", "out", "lse", "input_row_offsets", "blocks", "lookup_table", "cache_lengths",
                "attn_sink", "scalar_args", "q_scale", "scales", "d_indices", "topk_lengths",
                "logical_indices", "extra_blocks", "extra_d_indices", "extra_topk_lengths",
                "extra_scales")
RUN_ARRAYS = 3
# Arrays the kernels move in 16-byte pieces (cp.async, bulk and TMA copies, uint4 stores):
# their addresses must be 16-byte aligned.  (index in ARRAY_PARAMS, the argument's name)
ALIGNED_16 = tuple((ARRAY_PARAMS.index(param), name) for param, name in (
    ("q", "q"), ("out", "output"), ("blocks", "kv_collection.blocks"), ("extra_blocks", "extra_k.blocks")))
_Q, _OUT, _BLOCKS, _EXTRA_BLOCKS = (i for i, _ in ALIGNED_16)


def check_aligned(ptrs) -> None:
    """ValueError naming the first array of ALIGNED_16 among ``ptrs`` (addresses in
    ARRAY_PARAMS order; a prefix of them for plan.run) that lies off 16 bytes."""
    # (one OR of the addresses on the way: plan.run pays this on every call)
    if not ((ptrs[_Q] or 0) | (ptrs[_OUT] or 0)) & 15 and (
            len(ptrs) <= RUN_ARRAYS or not ((ptrs[_BLOCKS] or 0) | (ptrs[_EXTRA_BLOCKS] or 0)) & 15):
        return
    for i, name in ALIGNED_16:
        if i < len(ptrs) and ptrs[i] and ptrs[i] % 16:
            raise ValueError(f"{name}: expected a 16-byte aligned address (the kernels move 16-byte "
                             f"pieces), got {ptrs[i]:#x}, {ptrs[i] % 16} bytes past a boundary")


# The argument each per-call array is named by in messages.
_RUN_NAMES = ("q", "output", "lse")
LAUNCH_MODES = ("driver", "cupy")

NOT_A_DEVICE_ARRAY = object()      # array_info's signature of anything else


# ------------------------------------------------------------------ arrays

_KIND_CUPY, _KIND_TORCH, _KIND_OTHER = range(3)
_kinds: dict = {}


def _kind(t) -> int:
    kind = _kinds.get(t)
    if kind is None:
        if is_cupy_type(t):
            kind = _KIND_CUPY
        elif t.__module__.startswith("torch") and hasattr(t, "data_ptr"):
            kind = _KIND_TORCH
        else:
            kind = _KIND_OTHER
        _kinds[t] = kind
    return kind


def array_info(x):
    """``(signature, address)`` of a device array: the signature is what
    validation reads of it (dtype name, shape, C-contiguity, device), the
    address its first byte.  ``(None, 0)`` for None; the signature is
    ``NOT_A_DEVICE_ARRAY`` for anything else (a host array, a CPU tensor)."""
    if x is None:
        return None, 0
    kind = _kind(type(x))
    if kind == _KIND_CUPY:
        data = x.data
        return (dtype_name(x), x.shape, x._c_contiguous, data.device_id), data.ptr
    if kind == _KIND_TORCH:
        dev = x.get_device()
        if dev < 0:
            return NOT_A_DEVICE_ARRAY, 0
        return (dtype_name(x), tuple(x.shape), x.is_contiguous(), dev), x.data_ptr()
    cai = getattr(x, "__cuda_array_interface__", None)   # any other CUDA array
    data = cai.get("data") if isinstance(cai, dict) else None
    if not data:
        return NOT_A_DEVICE_ARRAY, 0
    return (dtype_name(x), tuple(x.shape), _is_c_contiguous(x), _device_of(x)), int(data[0])


def describe_signature(sig) -> str:
    if sig is None:
        return "None"
    if sig is NOT_A_DEVICE_ARRAY:
        return "not a CUDA array"
    dt, shape, contiguous, dev = sig
    return (f"{dt} {list(shape)}{'' if contiguous else ' non-contiguous'}"
            f"{'' if dev is None else f' on device {dev}'}")


# ------------------------------------------------------------------ streams

_torch_raw_stream = None


def stream_handle(stream, q, device_id) -> int:
    """The ``cudaStream_t`` of a call: ``stream`` (a CuPy stream, a torch stream,
    an object with ``cuda_stream`` or a raw handle), else the current torch
    stream of q's device for torch inputs, else CuPy's current stream."""
    global _torch_raw_stream
    if stream is None:
        if _kind(type(q)) == _KIND_TORCH:
            if _torch_raw_stream is None:
                torch = sys.modules["torch"]
                raw = getattr(torch._C, "_cuda_getCurrentRawStream", None)
                _torch_raw_stream = raw if raw is not None else (
                    lambda dev: torch.cuda.current_stream(dev).cuda_stream)
            return _torch_raw_stream(device_id)
        import cupy
        return cupy.cuda.get_current_stream().ptr
    if isinstance(stream, int) and not isinstance(stream, bool):
        if stream < 0:
            raise ValueError(f"stream: expected a stream handle >= 0, got {stream}")
        return stream
    ptr = getattr(stream, "ptr", None)             # cupy Stream / ExternalStream
    if isinstance(ptr, int):
        return ptr
    handle = getattr(stream, "cuda_stream", None)  # torch.cuda.Stream
    if isinstance(handle, int):
        return handle
    raise TypeError(f"stream: expected a cupy/torch CUDA stream, a raw handle or None, "
                    f"got {type(stream).__name__}")


def external_stream(handle: int):
    """A CuPy stream object for a raw handle (CuPy's own launch path and
    ``ndarray.set`` want one)."""
    import warnings

    import cupy
    with warnings.catch_warnings():
        # CuPy 14 prefers Stream.from_external(obj with __cuda_stream__); a raw
        # handle (torch's .cuda_stream, MAX's stream) still needs ExternalStream.
        warnings.simplefilter("ignore", DeprecationWarning)
        return cupy.cuda.ExternalStream(handle)


# ------------------------------------------------------------------ launches

def _driver_launch(*args):
    from cupy.cuda import driver
    global _launch_kernel
    _launch_kernel = driver.launchKernel
    return _launch_kernel(*args)


# cuLaunchKernel(f, gx, gy, gz, bx, by, bz, smem, stream, kernelParams, extra);
# tools/host_cost.py --stub and the CPU tests replace it.
_launch_kernel = _driver_launch


def _driver_launch_ex(*args):
    """cuLaunchKernelEx(config, f, kernelParams, extra) (mla_cupy.driver)."""
    global _launch_kernel_ex
    f = driver.bind("cuLaunchKernelEx", [ctypes.c_void_p] * 4)

    def launch_ex(config, func, params, extra):
        driver.check("cuLaunchKernelEx", f(config, func, params, extra))
    _launch_kernel_ex = launch_ex
    return launch_ex(*args)


# cuLaunchKernelEx(config, f, kernelParams, extra): a programmatic dependent launch.
_launch_kernel_ex = _driver_launch_ex


def allocate_device_bytes(device_id: int, nbytes: int):
    """A new uint8 device array (the CPU tests replace it)."""
    import cupy
    with cupy.cuda.Device(device_id):
        return cupy.empty(nbytes, dtype=cupy.uint8)


def stream_capturing(handle: int) -> bool:
    """Whether the stream ``handle`` is capturing a CUDA graph (the CPU tests replace it)."""
    from cupy.cuda import runtime
    return bool(runtime.streamIsCapturing(handle))


def current_device() -> int:
    from cupy.cuda import runtime
    return runtime.getDevice()


def launch_mode() -> str:
    mode = environment.get(environment.LAUNCH) or "driver"
    if mode not in LAUNCH_MODES:
        raise ValueError(f"{environment.LAUNCH}: expected one of {LAUNCH_MODES}, got {mode!r}")
    return mode


class KernelLaunch:
    """One kernel's launch: its function, grid, block, dynamic shared memory and
    parameters in 8-byte slots (``abi.Abi.pack_slots``); ``array_slots`` pairs
    each slot holding an address of :data:`ARRAY_PARAMS` with that position."""

    def __init__(self, kernel_abi: abi.Abi, raw_kernel, func_ptr: int, grid, block, smem: int,
                 values: dict, mode: str, kv_map_source=None, programmatic: bool = False):
        self.abi, self.raw_kernel, self.func_ptr = kernel_abi, raw_kernel, int(func_ptr)
        self.grid = tuple(int(g) for g in grid) + (1,) * (3 - len(grid))
        self.block = tuple(int(b) for b in block) + (1,) * (3 - len(block))
        self.smem, self.mode = int(smem), mode
        self.slots = kernel_abi.pack_slots(values)
        self._params = kernel_abi.param_addresses(self.slots.buffer_info()[0])
        self.params_address = self._params.buffer_info()[0]
        names = kernel_abi.names
        self.array_slots = tuple((kernel_abi.slot(n), k) for k, n in enumerate(ARRAY_PARAMS) if n in names)
        self.run_slots = tuple((s, k) for s, k in self.array_slots if k < RUN_ARRAYS)
        # programmatic: launched as the previous kernel's programmatic dependent
        # (PDL, sm_90; the driver path only: CuPy's launch has no attributes)
        self.programmatic = programmatic and mode == "driver"
        if self.programmatic:
            self._attr = driver.LaunchAttribute(id=driver.PROGRAMMATIC_STREAM_SERIALIZATION)
            self._attr.value = (1).to_bytes(4, "little") + bytes(60)
            g, b = self.grid, self.block
            self._config = driver.LaunchConfig(g[0], g[1], g[2], b[0], b[1], b[2], self.smem, None,
                                               ctypes.pointer(self._attr), 1)
            self._config_address = ctypes.addressof(self._config)
        # tensor_map.KvMapSource: kv_box_rows and kv_map follow the cache's address
        self.kv_map_source = kv_map_source
        if kv_map_source is not None:
            self._blocks_slot = kernel_abi.slot("blocks")
            self._box_slot, self._map_slot = kernel_abi.slot("kv_box_rows"), kernel_abi.slot("kv_map")
            self._map_address = None
            self.refresh_kv_map()

    def refresh_kv_map(self) -> None:
        """Re-derive kv_box_rows and kv_map when the cache's address changed."""
        address = self.slots[self._blocks_slot]
        if address == self._map_address:
            return
        rows, opaque = self.kv_map_source.for_address(address)
        self.slots[self._box_slot] = rows
        self.slots[self._map_slot:self._map_slot + len(opaque) // abi.SLOT_BYTES] = array.array("Q", opaque)
        self._map_address = address

    def launch(self, stream: int) -> None:
        if self.programmatic:
            self._config.hStream = stream or None
            _launch_kernel_ex(self._config_address, self.func_ptr, self.params_address, 0)
        elif self.mode == "driver":
            g, b = self.grid, self.block
            _launch_kernel(self.func_ptr, g[0], g[1], g[2], b[0], b[1], b[2], self.smem, stream,
                           self.params_address, 0)
        else:   # CuPy's own argument conversion, for comparison (MLA_CUPY_LAUNCH=cupy)
            self.raw_kernel(self.grid, self.block, self.abi.unpack_slots(self.slots),
                            shared_mem=self.smem, stream=external_stream(stream))


# ------------------------------------------------------------------ the plan

class DecodePlan:
    """A validated decode call (build one with :func:`mla_cupy.plan_decode`).

    ``run(q, output, lse=None, stream=None)`` launches it on new per-call arrays;
    everything else (the cache, offsets, scalar buffer, sink, sparse indices,
    flags) was fixed, by address, when the plan was made: re-plan when any of it
    is replaced by another array (writing into the same arrays is fine: that is
    what a decode loop and a CUDA graph replay do).

    ``run`` checks that q, output and lse have the planned dtype, shape,
    contiguity and device (lse may be None, or given when the plan had none) and
    raises TypeError / ValueError naming the argument before launching anything.
    It allocates, synchronises and copies nothing, so it can be captured in a
    CUDA graph (torch.cuda.graph or CuPy's stream capture).  The plan owns its
    split-KV workspace: two runs of one plan must not overlap on different
    streams.  ``run`` is thread-safe (the slots are written under a lock).
    """

    def __init__(self, *, device_id: int, variant: str, num_partitions: int, decode, combine,
                 run_signatures: tuple, noop: bool, stream=None, refs=(), workspace=None,
                 precheck=None, schedule_key=None):
        self.device_id = device_id
        self.variant = variant
        self.num_partitions = num_partitions
        self.noop = noop
        self._decode, self._combine = decode, combine
        self._launches = tuple(k for k in (decode, combine) if k is not None)
        self._sigs = run_signatures          # of q, output, lse (lse: its shape when given)
        self._stream = stream
        self._refs = refs                    # arrays the slots point into, kept alive
        self.workspace = workspace
        # checked mode (validate="full"): precheck(stream handle) runs the device
        # check of the call's values and raises before each launch
        self.precheck = precheck
        self._lock = threading.Lock()
        self._written = None                 # the full address tuple last written, if any
        # decode_schedule.ScheduleKey of a decode that keeps DecodeSchedule records (its
        # array addresses are read from the slots at each launch), else None
        self.schedule_key = schedule_key
        if decode is not None:   # the slots _set_schedule writes at each launch (looked up once)
            a = decode.abi
            self._schedule_slots = (a.slot("schedule"), a.slot("schedule_mode"), a.slot("input_row_offsets"),
                                    a.slot("cache_lengths"), a.slot("scalar_args"))

    @property
    def grid(self):
        """The decode kernel's grid (x: row tiles, y: num_partitions, z: batch_size)."""
        return None if self._decode is None else self._decode.grid

    def __repr__(self):
        return (f"DecodePlan({self.variant}, device={self.device_id}, grid={self.grid}, "
                f"num_partitions={self.num_partitions}{', noop' if self.noop else ''})")

    def run(self, q, output, lse=None, *, stream=None, schedule=None) -> None:
        """Launch the planned call on ``q`` and ``output`` (and ``lse``); see the class.
        ``schedule``: a :class:`~mla_cupy.DecodeSchedule` shared by the calls of one
        decode step (the first writes the work it found, the others read it)."""
        sig_q, ptr_q = array_info(q)
        sig_o, ptr_o = array_info(output)
        sig_l, ptr_l = array_info(lse)
        want_q, want_o, want_l = self._sigs
        if sig_q != want_q or sig_o != want_o or (sig_l is not None and sig_l != want_l):
            self._mismatch((q, output, lse), (sig_q, sig_o, sig_l))
        if self.noop:
            return
        handle = stream_handle(self._stream if stream is None else stream, q, self.device_id)
        if self.precheck is not None:
            self.precheck(handle)
        self.launch_with((ptr_q, ptr_o, ptr_l), handle, run_only=True, schedule=schedule)

    def _mismatch(self, arrays, sigs):
        from . import validate as V
        for name, x, got, want in zip(_RUN_NAMES, arrays, sigs, self._sigs):
            if got == want or (name == "lse" and got is None):
                continue
            dt, shape, _, dev = want
            V.check_device_array(name, x, dtypes=(dt,), shape=shape)   # TypeError / ValueError
            if got[3] != dev:
                raise ValueError(f"{name}: expected an array on CUDA device {dev} (as planned), "
                                 f"got device {got[3]}")
            raise ValueError(f"{name}: expected {describe_signature(want)} as planned, "
                             f"got {describe_signature(got)}")

    def launch_with(self, ptrs, handle, *, run_only: bool = False, schedule=None) -> None:
        """Write the addresses ``ptrs`` (of :data:`ARRAY_PARAMS`, in that order;
        only the first RUN_ARRAYS when ``run_only``) and the ``schedule``'s into the
        slots and launch: the entry points' path on a memoised plan, and ``run``'s."""
        if schedule is not None and not isinstance(schedule, decode_schedule.DecodeSchedule):
            raise TypeError(f"schedule: expected a mla_cupy.DecodeSchedule or None, got {type(schedule).__name__}")
        if self.noop:
            return
        with self._lock:
            if ptrs != self._written:   # a decode loop passes the same arrays: nothing to write
                self._write(ptrs, run_only)
                self._written = ptrs if not run_only else None
            self._set_schedule(schedule, handle)
            self._launch_all(handle)

    def _set_schedule(self, schedule, handle) -> None:
        """The decode's schedule and schedule_mode slots for this launch (raises
        before the launch when the schedule was written by another kind of call)."""
        if self.schedule_key is None:            # keeps no records: the slots stay as packed (null, FIND)
            return
        slots = self._decode.slots
        at, mode, offsets, lengths, sa = self._schedule_slots
        if schedule is None:
            slots[at] = slots[mode] = 0          # (decode_schedule.FIND)
            return
        key = self.schedule_key.with_arrays(slots[offsets], slots[lengths], slots[sa])
        slots[at], slots[mode] = schedule.bind(key, capturing=stream_capturing(handle),
                                               allocate=self._allocate_schedule)

    def _allocate_schedule(self, nbytes: int):
        x = allocate_device_bytes(self.device_id, nbytes)
        return x, array_info(x)[1]

    def bind(self, ptrs, stream) -> None:
        """Fix every address (plan_decode) and ``run``'s default stream."""
        with self._lock:
            self._write(ptrs, False)
            self._written = None
            self._stream = stream

    def _write(self, ptrs, run_only: bool) -> None:
        check_aligned(ptrs)   # (new addresses only: a decode loop's same arrays are checked once)
        for k in self._launches:
            slots = k.slots
            for s, i in (k.run_slots if run_only else k.array_slots):
                slots[s] = ptrs[i]
            if k.kv_map_source is not None and not run_only:
                k.refresh_kv_map()

    def _launch_all(self, handle) -> None:
        if current_device() != self.device_id:
            import cupy
            with cupy.cuda.Device(self.device_id):
                for k in self._launches:
                    k.launch(handle)
        else:
            for k in self._launches:
                k.launch(handle)
