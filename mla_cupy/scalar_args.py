"""``scalar_args_buf``: int64[3] on the device = [batch_size, q_max_seq_len, num_partitions].

Kernels read the batch size from it on the device, so a captured CUDA graph
can replay with a smaller batch; grids come from the host values kept beside
the buffer, never from a device-to-host copy.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading
from typing import Any

import numpy as np

from . import environment
from .compiler import resident_ctas
from .schedule import (BATCH_INVARIANT_SPLIT_KEYS, H200_SMS, PAIR_KEYS_PER_TILE, PAIR_PARTIAL_COST,
                       PAIR_TILE_COST, batch_invariant_partitions, choose_num_partitions, key_axis_bound, row_tiling)
from .validate import check_flag

BATCH_SIZE, Q_MAX_SEQ_LEN, NUM_PARTITIONS = range(3)
LENGTH = 3


@dataclasses.dataclass(frozen=True)
class ScalarArgs:
    """The device buffer plus the host copies of its values."""

    buffer: Any           # cupy int64[3]
    batch_size: int
    q_max_seq_len: int
    num_partitions: int
    batch_invariant: bool = False   # the split does not depend on the batch (§10)
    split_len: int = 0              # keys per split (batch_invariant), 0: by num_partitions
    # num_partitions was chosen here (not given): the dispatcher may run the narrow
    # kernel's shares of the batch's tiles instead (segment mode, docs/spec.md section 7)
    split_chosen: bool = False

    def update(self, batch_size: int, q_max_seq_len: int | None = None, stream=None) -> "ScalarArgs":
        """Rewrite the device buffer in place (same address, so a captured
        graph sees it) for a replay with ``batch_size`` <= the captured one.
        ``stream``: where the copy is ordered (a CuPy or torch stream or a raw
        handle; None: CuPy's current stream)."""
        if q_max_seq_len is None:
            q_max_seq_len = self.q_max_seq_len
        if not 0 <= batch_size <= self.batch_size or not 0 <= q_max_seq_len <= self.q_max_seq_len:
            raise ValueError(f"batch_size/q_max_seq_len: expected at most the packed "
                             f"({self.batch_size}, {self.q_max_seq_len}), got ({batch_size}, {q_max_seq_len})")
        host = np.array([batch_size, q_max_seq_len, self.num_partitions], dtype=np.int64)
        if stream is not None and not hasattr(stream, "ptr"):   # torch stream or raw handle
            from .plan import external_stream, stream_handle
            stream = external_stream(stream_handle(stream, None, None))
        self.buffer.set(host, stream=stream)
        return dataclasses.replace(self, batch_size=batch_size, q_max_seq_len=q_max_seq_len)


def sm_count_of_current_device() -> int:
    try:
        from cupy.cuda import runtime
        return _sm_count(runtime.getDevice())
    except Exception:   # no GPU (CPU tests, CLI): plan for an H200
        return H200_SMS


@functools.lru_cache(maxsize=None)
def _sm_count(device_id: int) -> int:
    from cupy.cuda import runtime
    return int(runtime.deviceGetAttribute(runtime.cudaDevAttrMultiProcessorCount, device_id))


def pack_scalar_args(batch_size: int, q_max_seq_len: int, max_cache_length: int, num_heads: int,
                     *, layout: str = "bf16", sparse_mla: bool = False, indices_stride: int = 0,
                     extra_indices_stride: int = 0, fold_shared_index: bool = False,
                     num_partitions: int | None = None, window: int | None = None,
                     backend: str | None = None, batch_invariant: bool = False) -> ScalarArgs:
    """Choose ``num_partitions`` (unless given) and upload the int64[3] buffer;
    ``window``: the sliding-window length, if any; ``backend``: the kernel
    family the call will use (as the entry point's ``backend``: None reads
    MLA_CUPY_BACKEND, else auto), whose tiles the split is planned for.
    ``batch_invariant``: a split that does not depend on the batch (splits of
    schedule.BATCH_INVARIANT_SPLIT_KEYS keys, as many as the longest key axis
    of the batch needs; or ``num_partitions`` splits when given; docs/spec.md
    §10), recorded in the result for the entry point."""
    batch_invariant = check_flag("batch_invariant", batch_invariant)
    split_len = 0
    if num_partitions is None and batch_invariant:
        split_len = BATCH_INVARIANT_SPLIT_KEYS
        tokens = q_max_seq_len if (fold_shared_index or not sparse_mla) else 1
        num_partitions = batch_invariant_partitions(key_axis_bound(
            q_max_seq_len, max_cache_length, sparse_mla=sparse_mla, indices_stride=indices_stride,
            extra_indices_stride=extra_indices_stride, tokens_per_cta=tokens, window=window), window)
    split_chosen = num_partitions is None
    if num_partitions is None:
        group_rows = row_tiling(q_max_seq_len, num_heads, per_token=sparse_mla and not fold_shared_index).group_rows
        hopper = _hopper_plan(layout, sparse_mla, backend)
        pair = hopper and sparse_mla and _pair_plan(layout, sparse_mla, fold_shared_index, group_rows)
        num_partitions = choose_num_partitions(
            batch_size, num_heads, q_max_seq_len, max_cache_length,
            sparse_mla=sparse_mla, indices_stride=indices_stride,
            extra_indices_stride=extra_indices_stride, fold_shared_index=fold_shared_index,
            window=window, sm_count=sm_count_of_current_device(),
            resident_ctas=resident_ctas(layout), tile_rows=64 if hopper else None,
            **(dict(keys_per_tile=PAIR_KEYS_PER_TILE, tile_cost=PAIR_TILE_COST, partial_cost=PAIR_PARTIAL_COST)
               if pair else {}))
    check_num_partitions(num_partitions)
    host = np.array([batch_size, q_max_seq_len, num_partitions], dtype=np.int64)
    if (host < 0).any():
        raise ValueError(f"batch_size/q_max_seq_len: expected ints >= 0, got ({batch_size}, {q_max_seq_len})")
    return ScalarArgs(_upload(host), int(batch_size), int(q_max_seq_len), int(num_partitions),
                      batch_invariant, split_len, split_chosen)


def _upload(host: np.ndarray):
    import cupy
    return cupy.asarray(host)


# mla_decode's scalar buffers: num_partitions memoised per planning input
# (bounded: max_cache_length moves every decode step), buffers per (device,
# batch_size, q_max_seq_len, num_partitions, whether P was chosen).  A buffer is written once, never
# updated and never freed, so the graphs that captured it stay valid.
_PARTITIONS_MAX = 4096
_partitions: dict = {}
_shared: dict = {}
_shared_lock = threading.Lock()


def shared_scalar_args(batch_size: int, q_max_seq_len: int, max_cache_length: int, num_heads: int,
                       *, layout: str = "bf16", sparse_mla: bool = False, indices_stride: int = 0,
                       extra_indices_stride: int = 0, fold_shared_index: bool = False,
                       num_partitions: int | None = None, window: int | None = None,
                       backend: str | None = None, batch_invariant: bool = False,
                       upload_order=None) -> ScalarArgs:
    """:func:`pack_scalar_args` for the current device, memoised (what
    ``mla_decode`` uses): equal arguments give the same read-only ScalarArgs,
    so a steady decode loop packs and uploads nothing.  Do not ``update`` it.
    ``upload_order``: a callable giving the context (a stream) a new buffer's
    upload runs in; called only when a buffer is made."""

    from .plan import current_device
    device_id = current_device()
    key = (device_id, batch_size, type(q_max_seq_len), q_max_seq_len, max_cache_length, num_heads,
           layout, sparse_mla, indices_stride, extra_indices_stride, fold_shared_index,
           type(num_partitions), num_partitions, window, backend, environment.get(environment.BACKEND),
           type(batch_invariant), batch_invariant)
    try:
        values = _partitions.get(key)
    except TypeError:   # unhashable: pack_scalar_args reports it
        values = key = None
    if values is not None:
        return _shared[values]
    with upload_order() if upload_order is not None else contextlib.nullcontext():
        sa = pack_scalar_args(batch_size, q_max_seq_len, max_cache_length, num_heads, layout=layout,
                              sparse_mla=sparse_mla, indices_stride=indices_stride,
                              extra_indices_stride=extra_indices_stride,
                              fold_shared_index=fold_shared_index, num_partitions=num_partitions,
                              window=window, backend=backend, batch_invariant=batch_invariant)
    # split_chosen too: a buffer whose P the caller gave must not be handed to a call
    # that left P to the dispatcher (nor the reverse): segment mode applies only to the
    # latter (dispatch.segment_ctas)
    values = (device_id, sa.batch_size, sa.q_max_seq_len, sa.num_partitions, sa.batch_invariant,
              sa.split_len, sa.split_chosen)
    with _shared_lock:
        sa = _shared.setdefault(values, sa)
        if key is not None:
            while len(_partitions) >= _PARTITIONS_MAX:
                _partitions.pop(next(iter(_partitions)), None)
            _partitions[key] = values
    return sa


def _hopper_plan(layout: str, sparse_mla: bool, backend: str | None) -> bool:
    """Whether the call will run the Hopper family on the current device
    (compiler.runs_hopper, the dispatcher's rule); False without a GPU."""
    from .compiler import runs_hopper
    from .variants import DecodeKey, Sparsity, resolve_backend
    resolve_backend(backend)   # a bad backend is an error here too, not a portable plan
    from . import plan
    try:
        device_id = plan.current_device()
    except Exception:   # no GPU or driver (CPU tests, CLI)
        return False
    key = DecodeKey(layout=layout, sparsity=Sparsity.SPARSE if sparse_mla else Sparsity.DENSE)
    try:
        return runs_hopper(key, device_id, backend)
    except Exception:   # device query failed: plan for the portable tiles
        return False


def _pair_plan(layout: str, sparse_mla: bool, fold_shared_index: bool, group_rows: int) -> bool:
    """Whether a Hopper call runs the pair schedule (compiler.takes_pair, the
    dispatcher's rule), whose splits are whole 64-slot tiles."""
    from .compiler import takes_pair
    from .variants import DecodeKey, Sparsity
    key = DecodeKey(layout=layout, sparsity=Sparsity.SPARSE if sparse_mla else Sparsity.DENSE,
                    fold=fold_shared_index)
    return takes_pair(key, group_rows)


def check_batch_invariant_split(scalar_args_buf, num_partitions_in) -> None:
    """``batch_invariant=True`` needs a split count that does not depend on the
    batch: num_partitions_in, a raw buffer (the caller's own value), or a
    ScalarArgs packed with batch_invariant=True; an automatically chosen one
    (choose_num_partitions looks at the whole batch) is refused."""
    if (num_partitions_in is None and isinstance(scalar_args_buf, ScalarArgs)
            and not scalar_args_buf.batch_invariant):
        raise ValueError(
            "scalar_args_buf: batch_invariant=True needs a split that does not depend on the batch; "
            "expected pack_scalar_args(..., batch_invariant=True) or num_partitions_in, got a "
            f"ScalarArgs packed without batch_invariant (num_partitions={scalar_args_buf.num_partitions})")


def check_num_partitions(num_partitions, name: str = "num_partitions") -> None:
    if isinstance(num_partitions, bool) or not isinstance(num_partitions, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {type(num_partitions).__name__}")
    if not 1 <= num_partitions <= 65535:
        raise ValueError(f"{name}: expected an int in [1, 65535], got {num_partitions!r}")
