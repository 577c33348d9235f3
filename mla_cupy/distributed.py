"""Context-parallel MLA decode across GPUs (docs/spec.md §13).

Each rank holds a shard of every sequence's keys, by position
(:class:`mla_cupy.sharding.Sharding`: vLLM's interleaved DCP layout, or
contiguous ranges).  A call runs, on every rank, on one stream, without a
device-to-host copy (so a CUDA graph can capture it after one warm-up call):

1. the rank-local arguments, on the device (``kernels/distributed/mla_cp.cu.j2``):
   dense, the local cache lengths and a copy of the lookup table; sparse, the
   global top-k positions translated to this rank's rows (others -1);
2. the single-GPU decode of the shard (:func:`generic_flare_mla_decode_kv_cache_ragged`)
   with ``lse`` and without the sink, written into a fixed exchange buffer
   ``[out (16-bit) | lse (fp32)]``;
3. one all-gather of that buffer over NCCL (``torch.distributed`` when given a
   process group, ``cupy.cuda.nccl`` when given a communicator);
4. the split-KV combine kernel (``mla_combine_*``) over the gathered partials,
   which applies the sink once.

Why an all-gather: per rank it receives (R-1)·T·H·1028 bytes (bf16 output and
fp32 LSE); the all-reduce formulation (max of the LSEs, then a sum of
rescaled outputs, which must be fp32 to keep the sum accurate) moves
2(R-1)/R·T·H·(4 + 2052) bytes in two dependent collectives, about twice the
bytes at R = 2 and more than the all-gather up to R = 4.  Decode context
parallelism runs at R = 2..8 with small T·H, where the collective's latency
dominates; one collective beats two.

This module imports CuPy and torch only when called; ``import mla_cupy`` does
not import it.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import threading

import numpy as np

from . import abi
from . import validate as V
from .arrays import dtype_name, is_torch, to_cupy
from .cache import PagedKVCollection
from .dispatch import _device_id, _empty_like_io
from .dispatch import call_stream as _resolve_stream

from .records import D_V, Layout, output_dtype_name
from .sharding import Sharding
from .variants import Mask

__all__ = ["ContextParallel", "Sharding", "compile_offline", "make_nccl_comm", "nccl_unique_id"]

TEMPLATE = "distributed/mla_cp.cu.j2"
KERNELS = ("mla_cp_prepare_dense", "mla_cp_empty_lse", "mla_cp_translate", "mla_cp_unpack")
THREADS = 256
_SPARSE_ONLY = ("topk_positions", "topk_lengths", "logical_indices", "fold_shared_index",
                "extra_k", "extra_d_indices", "extra_indices_stride", "extra_topk_lengths",
                "extra_scales_ptr")
_EXTRA = ("extra_k", "extra_d_indices", "extra_indices_stride", "extra_topk_lengths", "extra_scales_ptr")


# ------------------------------------------------------------------ kernels

def render_source() -> str:
    """The CUDA source of the helper kernels (``KERNELS``), self-contained."""
    import jinja2

    from .render import kernels_dir
    env = jinja2.Environment(loader=jinja2.FileSystemLoader(str(kernels_dir())),
                             undefined=jinja2.StrictUndefined, keep_trailing_newline=True)
    return env.get_template(TEMPLATE).render()


def compile_offline(arch: str = "sm_90a") -> str:
    """NVRTC-compile the helper kernels without a GPU (CPU tests); returns
    ptxas's log.  Raises :class:`mla_cupy.compiler.KernelCompileError`."""
    from cupy.cuda import nvrtc

    from .compiler import BASE_OPTIONS, KernelCompileError, _dump_source, parse_arch
    source = render_source()
    prog = nvrtc.createProgram(source, "mla_cp.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, [*BASE_OPTIONS, f"-arch={parse_arch(arch)}", "-Xptxas=-v"])
        except nvrtc.NVRTCError:
            raise KernelCompileError("mla_cp", nvrtc.getProgramLog(prog),
                                     *_dump_source("mla_cp", source)) from None
        return nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)


@functools.lru_cache(maxsize=None)
def _module(device_id: int):
    import cupy

    from .compiler import BASE_OPTIONS, device_arch
    with cupy.cuda.Device(device_id):
        return cupy.RawModule(code=render_source(), backend="nvrtc",
                              options=(*BASE_OPTIONS, f"-arch={device_arch(device_id)}"))


def _launch(device_id, name, count, args):
    if count > 0:
        _module(device_id).get_function(name)(((count + THREADS - 1) // THREADS,), (THREADS,), args)


# ------------------------------------------------------------------ communicators

def nccl_unique_id():
    """``cupy.cuda.nccl.get_unique_id()`` on the rank that creates the id (send
    it to the others, then :func:`make_nccl_comm` everywhere)."""
    return _cupy_nccl().get_unique_id()


def make_nccl_comm(world_size: int, rank: int, unique_id):
    """A ``cupy.cuda.nccl.NcclCommunicator`` for the current device."""
    return _cupy_nccl().NcclCommunicator(world_size, unique_id, rank)


def _cupy_nccl():
    try:
        from cupy.cuda import nccl
    except ImportError as e:
        raise RuntimeError(f"nccl_comm: CuPy's NCCL bindings cannot be imported ({e}); install "
                           f"NCCL (e.g. the nvidia-nccl-cu12/cu13 wheel) or pass a torch.distributed "
                           f"process_group instead") from None
    if not getattr(nccl, "available", True):
        raise RuntimeError("nccl_comm: cupy.cuda.nccl is not available (CuPy found no NCCL library); "
                           "install NCCL (e.g. the nvidia-nccl-cu12/cu13 wheel) or pass a "
                           "torch.distributed process_group instead")
    return nccl


class _TorchComm:
    """All-gather through ``torch.distributed`` (the NCCL backend for CUDA buffers)."""

    uses_torch_buffers = True

    def __init__(self, group):
        import torch.distributed as dist
        if not isinstance(group, dist.ProcessGroup):
            raise TypeError(f"process_group: expected a torch.distributed.ProcessGroup, "
                            f"got {type(group).__name__}")
        self.group = group
        self.size, self.rank = dist.get_world_size(group), dist.get_rank(group)

    def all_gather(self, send_t, recv_t, stream):
        import torch
        import torch.distributed as dist
        device = send_t.device
        if device.type != "cuda" or torch.cuda.current_stream(device).cuda_stream == stream.ptr:
            ctx = contextlib.nullcontext()
        else:
            ctx = torch.cuda.stream(torch.cuda.ExternalStream(stream.ptr, device=device))
        with ctx:
            dist.all_gather_into_tensor(recv_t, send_t, group=self.group)


class _CupyNcclComm:
    """All-gather through ``cupy.cuda.nccl`` on the caller's stream."""

    uses_torch_buffers = False

    def __init__(self, comm):
        if not all(callable(getattr(comm, m, None)) for m in ("allGather", "rank_id", "size")):
            raise TypeError(f"nccl_comm: expected a cupy.cuda.nccl.NcclCommunicator, got {type(comm).__name__}")
        self.comm = comm
        self.size, self.rank = comm.size(), comm.rank_id()

    def all_gather(self, send, recv, stream):
        nccl = _cupy_nccl()
        byte = getattr(nccl, "NCCL_UINT8", None)
        self.comm.allGather(send.data.ptr, recv.data.ptr, send.size,
                            nccl.NCCL_CHAR if byte is None else byte, stream.ptr)


# ------------------------------------------------------------------ workspace

class _Buffers:
    """Grow-only device buffers per (device, stream), as the decode's split-KV
    workspace: a buffer that is outgrown is retired, never freed, so a CUDA graph
    captured earlier keeps valid pointers (do not replay two graphs of one
    stream concurrently: they share these buffers)."""

    def __init__(self):
        self._bufs: dict = {}
        self._retired: list = []
        self._lock = threading.Lock()

    def get(self, key, nbytes, torch_device=None):
        """(cupy uint8 [nbytes] view, torch twin or None)."""
        with self._lock:
            have = self._bufs.get(key)
            if have is None or have[0].size < nbytes:
                if have is not None:
                    self._retired.append(have)
                size = max(nbytes, 256)
                if torch_device is not None:
                    import torch
                    t = torch.empty(size, dtype=torch.uint8, device=torch_device)
                    have = (to_cupy(t, "workspace"), t)
                else:
                    import cupy
                    have = (cupy.empty(size, dtype=np.uint8), None)
                self._bufs[key] = have
        c, t = have
        return c[:nbytes], (None if t is None else t[:nbytes])


@dataclasses.dataclass
class _Local:
    """What local_decode leaves for the merge."""

    partial_out: object      # cupy [T, H, 512] 16-bit view of the exchange buffer
    partial_lse: object      # cupy [T, H] float32 view
    scalar_args: object      # ScalarArgs with batch_size = B


class ContextParallel:
    """Context-parallel decode on this rank (docs/spec.md §13).

    ``sharding``: this rank's :class:`Sharding`; ``process_group`` (a
    ``torch.distributed`` NCCL group) or ``nccl_comm`` (a
    ``cupy.cuda.nccl.NcclCommunicator``): exactly one of them when
    ``world_size > 1``, neither when it is 1.  The group's size and this
    process's rank in it must be the sharding's.
    """

    def __init__(self, sharding: Sharding, *, process_group=None, nccl_comm=None):
        if not isinstance(sharding, Sharding):
            raise TypeError(f"sharding: expected a mla_cupy.sharding.Sharding, got {type(sharding).__name__}")
        if process_group is not None and nccl_comm is not None:
            raise ValueError("process_group, nccl_comm: expected one of them, got both")
        self.sharding = sharding
        self.comm = None
        if process_group is not None:
            self.comm = _TorchComm(process_group)
        elif nccl_comm is not None:
            self.comm = _CupyNcclComm(nccl_comm)
        elif sharding.world_size > 1:
            raise ValueError(f"process_group, nccl_comm: world_size {sharding.world_size} needs a "
                             f"communicator, got neither")
        if self.comm is not None and (self.comm.size, self.comm.rank) != (sharding.world_size, sharding.rank):
            raise ValueError(f"sharding: expected world_size, rank = ({self.comm.size}, {self.comm.rank}) "
                             f"of the communicator, got ({sharding.world_size}, {sharding.rank})")
        self._buffers = _Buffers()
        self._scalar_args: dict = {}

    # -------------------------------------------------------------- public

    def decode(self, q, kv_collection, input_row_offsets, *, attn_sink=None, return_lse=False,
               out=None, lse=None, stream=None, **local_args):
        """The attention of ``q`` over all ranks' keys; every rank gets the whole
        ``out`` (and ``lse``), as :func:`mla_cupy.mla_decode` would give on one GPU
        holding the whole cache.  Collective: every rank calls it with the same
        ``q``, offsets, global cache lengths and arguments, its own shard.

        ``kv_collection``: this rank's shard; its ``cache_lengths`` are the
        **global** ``C_b`` and its ``lookup_table`` pages this rank's local
        positions.  ``local_args`` are :meth:`local_decode`'s.  Returns ``out``
        or ``(out, lse)`` like ``mla_decode``."""
        local = self._local(q, kv_collection, input_row_offsets, stream=stream, **local_args)
        return self._merge(local, q, input_row_offsets, attn_sink=attn_sink, return_lse=return_lse,
                           out=out, lse=lse, stream=stream)

    def local_decode(self, q, kv_collection, input_row_offsets, *, q_max_seq_len=None, layer_idx=0,
                     scale=None, mask="causal", window=None, num_partitions=None, stream=None,
                     backend=None, **sparse_and_fp8_args):
        """This rank's partial attention, without the sink and without any
        communication: ``(partial_out [T, H, 512], partial_lse [T, H])``, views of
        the exchange buffer, valid until the next call on this stream.

        Dense (the default): every sequence has at most one new token
        (``q_max_seq_len <= 1``), mask ``"causal"`` or ``"null"``, or
        ``"sliding_window_causal"`` with layout ``interleave`` and a ``window``
        multiple of ``world_size * interleave_size``.  Sparse
        (``sparse_mla=True``): ``topk_positions`` ``[T, k]`` int32 holds **global**
        token positions (-1 = none) instead of ``d_indices``; each rank keeps
        those it holds; ``topk_lengths``, ``logical_indices`` and
        ``fold_shared_index`` as single-GPU; an extra stream (``extra_k`` ...) is
        attended by rank 0 only.  fp8 arguments (``q_scale_ptr``) as single-GPU."""
        local = self._local(q, kv_collection, input_row_offsets, q_max_seq_len=q_max_seq_len,
                            layer_idx=layer_idx, scale=scale, mask=mask, window=window,
                            num_partitions=num_partitions, stream=stream, backend=backend,
                            **sparse_and_fp8_args)
        return local.partial_out, local.partial_lse

    def merge(self, partial_out, partial_lse, input_row_offsets, *, attn_sink=None, return_lse=False,
              out=None, lse=None, stream=None):
        """Merge every rank's ``(partial_out, partial_lse)`` (e.g. from
        :meth:`local_decode`) by log-sum-exp and apply the sink once; collective."""
        V.check_device_array("partial_out", partial_out, dtypes=("bfloat16", "float16"), ndim=3)
        num_tokens, num_heads = partial_out.shape[0], partial_out.shape[1]
        V.check_output(partial_out, Layout.FP16 if dtype_name(partial_out) == "float16" else Layout.BF16,
                       num_tokens, num_heads)
        V.check_device_array("partial_lse", partial_lse, dtypes=("float32",),
                             shape=(num_tokens, num_heads))
        batch = V.check_row_offsets(input_row_offsets, 1 << 31)
        cp_stream = _resolve_stream(stream, partial_out)
        device_id = _device_id(partial_out)
        import cupy
        with cupy.cuda.Device(device_id), cp_stream:
            send_out, send_lse = self._exchange_views(device_id, cp_stream, num_tokens, num_heads,
                                                      dtype_name(partial_out))[:2]
            src_out, src_lse = to_cupy(partial_out, "partial_out"), to_cupy(partial_lse, "partial_lse")
            if src_out.data.ptr != send_out.data.ptr:
                cupy.copyto(send_out.view(np.uint16), src_out.view(np.uint16))
            if src_lse.data.ptr != send_lse.data.ptr:
                cupy.copyto(send_lse, src_lse)
            sa = self._scalar_args_for(device_id, batch, 1, 0, num_heads, "bf16", 1)
        local = _Local(send_out, send_lse, sa)
        return self._merge(local, partial_out, input_row_offsets, attn_sink=attn_sink,
                           return_lse=return_lse, out=out, lse=lse, stream=stream)

    # -------------------------------------------------------------- steps

    def _local(self, q, kv, input_row_offsets, *, q_max_seq_len=None, layer_idx=0, scale=None,
               mask="causal", window=None, num_partitions=None, stream=None, backend=None,
               **kw) -> _Local:
        from .dispatch import generic_flare_mla_decode_kv_cache_ragged

        shard = self.sharding
        if not isinstance(kv, PagedKVCollection):
            raise TypeError(f"kv_collection: expected a PagedKVCollection, got {type(kv).__name__}")
        if q is None or not hasattr(q, "shape") or len(q.shape) != 3:
            raise TypeError(f"q: expected a CUDA array [T, H, D], got {getattr(q, 'shape', type(q).__name__)}")
        num_tokens, num_heads = int(q.shape[0]), int(q.shape[1])
        batch = V.check_row_offsets(input_row_offsets, kv.batch_size)
        mask_enum = V.check_mask(mask, -1 if window is None else window)
        sparse = V.check_flag("sparse_mla", kw.pop("sparse_mla", False))
        if "d_indices" in kw:
            raise ValueError("d_indices: context-parallel sparse decode takes global token positions "
                             "in topk_positions (each rank translates them to its own rows), got d_indices")
        if not sparse:
            given = [k for k in _SPARSE_ONLY if not _unset(kw.get(k))]
            if given:
                raise ValueError(f"{given[0]}: sparse-only argument given with sparse_mla=False")
        if q_max_seq_len is None:
            q_max_seq_len = _read_q_max_seq_len(input_row_offsets)
        V.check_int("q_max_seq_len", q_max_seq_len, lo=0)
        local_window = None
        if sparse:
            positions = kw.pop("topk_positions", None)
            V.check_device_array("topk_positions", positions, dtypes=("int32",), ndim=2)
            if positions.shape[0] != num_tokens:
                raise ValueError(f"topk_positions: expected [{num_tokens}, k] (one row per token), "
                                 f"got {list(positions.shape)}")
            if shard.rank != 0:
                for k in _EXTRA:
                    kw.pop(k, None)
        else:
            if q_max_seq_len > 1:
                raise ValueError(
                    f"q_max_seq_len: dense context-parallel decode takes at most one new token per "
                    f"sequence (a causal mask over several new tokens depends on global positions "
                    f"that a rank's dense shard cannot express); got {q_max_seq_len}; use sparse_mla "
                    f"with topk_positions for several tokens")
            if mask_enum is Mask.SLIDING_WINDOW_CAUSAL:
                local_window = shard.local_window(window)
        if scale is None:
            scale = kv.d_qk ** -0.5

        import cupy
        device_id = _device_id(q)
        cp_stream = _resolve_stream(stream, q)
        out_dt = output_dtype_name(kv.layout)
        max_keys = kv.max_cache_length + q_max_seq_len
        with cupy.cuda.Device(device_id), cp_stream:
            send_out, send_lse = self._exchange_views(device_id, cp_stream, num_tokens, num_heads,
                                                      "float16" if out_dt == "fp16" else "bfloat16")[:2]
            offsets = to_cupy(input_row_offsets, "input_row_offsets")
            lengths = to_cupy(kv.cache_lengths, "kv_collection.cache_lengths")
            table = to_cupy(kv.lookup_table, "kv_collection.lookup_table")
            args = dict(kw)
            if sparse:
                stride = int(positions.shape[1])
                rows = self._buffer(device_id, cp_stream, "d_indices", 4 * num_tokens * stride)
                rows = rows.view(np.int32).reshape(num_tokens, stride)
                _launch(device_id, "mla_cp_translate", num_tokens * stride, (
                    to_cupy(positions, "topk_positions"), rows, offsets, lengths, table,
                    np.int32(batch), np.int64(num_tokens), np.int32(stride),
                    np.int32(table.shape[1]), np.int32(kv.page_size),
                    np.int64(kv.num_blocks * kv.page_size), *_shard_args(shard)))
                local_kv, local_max = kv, kv.max_cache_length
                args.update(sparse_mla=True, d_indices=rows, indices_stride=stride)
            else:
                num_rows = int(lengths.shape[0])
                local_lengths = self._buffer(device_id, cp_stream, "local_lengths", 4 * num_rows).view(np.uint32)
                empty = self._buffer(device_id, cp_stream, "empty", 4 * num_rows).view(np.int32)
                local_table = self._buffer(device_id, cp_stream, "lookup_table", 4 * table.size)
                local_table = local_table.view(table.dtype).reshape(table.shape)
                cupy.copyto(local_table, table)
                _launch(device_id, "mla_cp_prepare_dense", num_rows, (
                    lengths, offsets, np.int32(batch), np.int32(num_rows), local_lengths, empty,
                    local_table, np.int32(table.shape[1]), *_shard_args(shard)))
                local_max = shard.max_local_count(max_keys)   # a bound on every C_b^r
                local_kv = PagedKVCollection(kv.blocks, local_table, local_lengths.view(lengths.dtype),
                                             kv.page_size, scales=kv.scales, layout=kv.layout,
                                             max_cache_length=local_max)
            stride_args = (args.get("indices_stride", 0), args.get("extra_indices_stride") or
                           int(getattr(args.get("extra_d_indices"), "shape", (0, 0))[-1]))
            if args.get("extra_d_indices") is not None:
                args["extra_indices_stride"] = stride_args[1]
            sa = self._scalar_args_for(device_id, batch, q_max_seq_len, local_max, num_heads,
                                       kv.layout.value, num_partitions, sparse=sparse,
                                       strides=stride_args, fold=bool(args.get("fold_shared_index")),
                                       window=local_window, backend=backend)
            args.setdefault("per_token_scale_rope_aware", kv.layout is Layout.FP8_ROPE_AWARE)
            generic_flare_mla_decode_kv_cache_ragged(
                q, input_row_offsets, local_kv, layer_idx, scale, send_out, sa, mask_str=mask,
                local_window_size=-1 if local_window is None else local_window, lse=send_lse,
                stream=cp_stream, backend=backend, **args)
            if not sparse and batch > 0:
                _launch(device_id, "mla_cp_empty_lse", num_tokens * num_heads, (
                    send_lse, offsets, empty, np.int32(batch), np.int64(num_tokens), np.int32(num_heads)))
        return _Local(send_out, send_lse, sa)

    def _merge(self, local: _Local, like, input_row_offsets, *, attn_sink, return_lse, out, lse, stream):
        import cupy

        from .compiler import get_kernel
        from .render import combine_shape
        from .variants import CombineKey

        return_lse = V.check_flag("return_lse", return_lse)
        num_tokens, num_heads = local.partial_out.shape[0], local.partial_out.shape[1]
        out_dt = dtype_name(local.partial_out)
        layout = Layout.FP16 if out_dt == "float16" else Layout.BF16
        torch_io = is_torch(like)
        if out is None:
            out = _empty_like_io(like, (num_tokens, num_heads, D_V), out_dt, torch_io)
        if lse is None and return_lse:
            lse = _empty_like_io(like, (num_tokens, num_heads), "float32", torch_io)
        V.check_output(out, layout, num_tokens, num_heads)
        V.check_lse(lse, num_tokens, num_heads)
        V.check_attn_sink(attn_sink, num_heads)
        device_id = _device_id(local.partial_out)
        cp_stream = _resolve_stream(stream, like)
        world = self.sharding.world_size
        with cupy.cuda.Device(device_id), cp_stream:
            send_out, _, send, send_t = self._exchange_views(device_id, cp_stream, num_tokens, num_heads, out_dt)
            chunk = send.size
            if world > 1:
                recv, recv_t = self._buffers.get((device_id, cp_stream.ptr, "recv"), world * chunk,
                                                 send_t.device if send_t is not None else None)
                if self.comm.uses_torch_buffers:
                    self.comm.all_gather(send_t, recv_t, cp_stream)
                else:
                    self.comm.all_gather(send, recv, cp_stream)
            else:
                recv = send
            rows = num_tokens * num_heads
            o_part = self._buffer(device_id, cp_stream, "o_part", 4 * world * rows * D_V).view(np.float32)
            lse_part = self._buffer(device_id, cp_stream, "lse_part", 4 * world * rows).view(np.float32)
            _launch(device_id, "mla_cp_unpack", world * rows * D_V, (
                recv, o_part, lse_part, np.int32(world), np.int64(rows), np.int64(chunk),
                np.int32(out_dt == "float16")))
            if rows > 0:
                shape = combine_shape(world, num_heads, num_tokens)
                combine = get_kernel(CombineKey(output_dtype_name(layout), shape.warp_rows), device_id)
                combine(shape.grid, shape.block, abi.COMBINE.pack(dict(
                    o_part=o_part, lse_part=lse_part,
                    attn_sink=None if attn_sink is None else to_cupy(attn_sink, "attn_sink"),
                    input_row_offsets=to_cupy(input_row_offsets, "input_row_offsets"),
                    scalar_args=local.scalar_args.buffer, out=to_cupy(out, "out"),
                    lse=None if lse is None else to_cupy(lse, "lse"),
                    num_heads=num_heads, num_tokens=num_tokens, num_partitions_in=world,
                    seg_info=None, segment_rows=0)))
        return (out, lse) if return_lse else out

    # -------------------------------------------------------------- buffers

    def _buffer(self, device_id, stream, name, nbytes):
        return self._buffers.get((device_id, stream.ptr, name), nbytes)[0]

    def _exchange_views(self, device_id, stream, num_tokens, num_heads, out_dtype):
        """(out view [T, H, 512], lse view [T, H], whole send buffer, its torch twin)."""
        import ml_dtypes
        rows = num_tokens * num_heads
        out_bytes = 2 * rows * D_V
        torch_device = None
        if self.comm is not None and self.comm.uses_torch_buffers:
            import torch
            torch_device = torch.device("cuda", device_id)
        send, send_t = self._buffers.get((device_id, stream.ptr, "send"), out_bytes + 4 * rows, torch_device)
        dt = np.float16 if out_dtype == "float16" else ml_dtypes.bfloat16
        out = send[:out_bytes].view(dt).reshape(num_tokens, num_heads, D_V)
        lse = send[out_bytes:].view(np.float32).reshape(num_tokens, num_heads)
        return out, lse, send, send_t

    def _scalar_args_for(self, device_id, batch, q_max_seq_len, max_cache_length, num_heads, layout,
                         num_partitions, *, sparse=False, strides=(0, 0), fold=False, window=None,
                         backend=None):
        """A ScalarArgs per distinct call shape, kept (its device buffer must stay
        at one address for captured graphs, and packing copies host to device)."""
        import cupy

        from .scalar_args import pack_scalar_args
        key = (device_id, batch, q_max_seq_len, max_cache_length, num_heads, layout, num_partitions,
               sparse, strides, fold, window, backend)
        sa = self._scalar_args.get(key)
        if sa is None:
            with cupy.cuda.Device(device_id):
                sa = self._scalar_args[key] = pack_scalar_args(
                    batch, q_max_seq_len, max_cache_length, num_heads, layout=layout,
                    sparse_mla=sparse, indices_stride=strides[0], extra_indices_stride=strides[1],
                    fold_shared_index=fold, num_partitions=num_partitions, window=window,
                    backend=backend)
        return sa


# ------------------------------------------------------------------ helpers

def _unset(v) -> bool:
    """None, False or 0: a sparse-only argument left at its default (arrays are set)."""
    return v is None or (isinstance(v, (bool, int, np.integer)) and not v)


def _shard_args(s: Sharding) -> tuple:
    return (np.int32(s.world_size), np.int32(s.rank), np.int32(s.interleave_size),
            np.int32(s.contiguous), np.int64(s.chunk_size or 1))


def _read_q_max_seq_len(input_row_offsets) -> int:
    """One device-to-host copy (as mla_decode without q_max_seq_len): not capturable."""
    from .arrays import to_host_int
    offs = to_host_int(input_row_offsets).astype(np.int64)
    return int(np.diff(offs).max()) if offs.shape[0] > 1 else 0
