"""The entry points: validate -> plan -> launch.

``generic_flare_mla_decode_kv_cache_ragged`` mirrors Modular MAX's kernel entry
(docs/spec.md); ``mla_decode`` is the convenient form that allocates the output and
packs the scalar arguments.
"""
from __future__ import annotations

import contextlib
import dataclasses
import functools
import inspect
import threading

import numpy as np

from . import abi, checked, compiler, decode_schedule, environment, records
from . import validate as V
from .arrays import is_torch, to_cupy
from .plan import (ARRAY_PARAMS, NOT_A_DEVICE_ARRAY, RUN_ARRAYS, DecodePlan, KernelLaunch, check_aligned,
                   array_info, external_stream, launch_mode, stream_handle)
from .cache import PagedKVCollection
from .compiler import arch_number, device_arch, get_kernel, hopper_key, runs_hopper, takes_evict_first, takes_multicast
from .render import combine_shape, launch_config, needs_kv_map, ring_segments, tma_box_keys, uses_kv_map
from .tensor_map import NO_MAP, KvMapSource
from .scalar_args import (ScalarArgs, check_batch_invariant_split, check_num_partitions, shared_scalar_args,
                          sm_count_of_current_device)
from .schedule import MAX_PARTITIONS, pair_grid_z, row_tiling
from .records import D_V, output_dtype_name
from .variants import (TILE_ROWS, Backend, CombineKey, DecodeKey, Layout, Mask, Schedule, Sparsity, resolve_backend,
                       segments_supports)

LOG2E = 1.4426950408889634


def generic_flare_mla_decode_kv_cache_ragged(
        q, input_row_offsets, kv_collection, layer_idx, scale, output, scalar_args_buf, *,
        mask_str="causal", local_window_size=-1, per_token_scale_rope_aware=False,
        sparse_mla=False, fold_shared_index=False, q_scale_ptr=None, d_indices=None,
        indices_stride=0, topk_lengths=None, attn_sink_ptr=None, extra_k=None,
        extra_d_indices=None, extra_indices_stride=0, extra_topk_lengths=None,
        extra_scales_ptr=None, num_partitions_in=None, logical_indices=None, lse=None,
        stream=None, backend=None, batch_invariant=False, validate=None, schedule=None) -> None:
    """MLA decode over a ragged batch against a paged latent cache (docs/spec.md).

    Writes ``output`` ``[T, H, 512]`` (and ``lse`` ``[T, H]`` float32 when given).
    ``scalar_args_buf`` is a :class:`ScalarArgs` (no device-to-host copy) or a raw
    int64[3] device array ``[batch_size, q_max_seq_len, num_partitions]``, which
    is read back once (the slow path).  Arrays are CuPy arrays or CUDA tensors;
    every check runs before anything is launched.

    ``backend`` picks the kernel family: ``"auto"`` (default; the
    ``MLA_CUPY_BACKEND`` environment variable overrides it) takes the Hopper
    wgmma kernels on sm_90 devices for the variants they cover and the
    portable mma.sync kernels elsewhere; ``"portable"`` forces the latter;
    ``"hopper"`` demands the former and raises where it does not apply.

    ``batch_invariant=True``: each sequence's output and lse are bit-identical
    whatever else is in the batch (a tile that depends on H alone and the
    scalar buffer's fixed split count; docs/spec.md §10).  ``validate="full"``
    (or MLA_CUPY_VALIDATE=1): a device-side check of offsets, lengths, table
    entries and indices raises ValueError before the decode (one
    device-to-host copy; docs/spec.md §11); the default ``"host"`` checks
    shapes and dtypes only.

    ``schedule``: a :class:`~mla_cupy.DecodeSchedule` shared by the calls of one
    decode step (a model's layers): the first call after its ``reset()`` writes the
    work each CTA found, the later ones read it (docs/spec.md §12).
    """
    # Checked mode: every call takes the full path (its device check reads
    # values, which change between calls).
    full_check = checked.resolve_validate(validate)
    # Fast path: a plan memoised on what validation reads of these arguments
    # (eager_key); a miss validates everything and plans (docs/spec.md §12).
    hit = None if full_check else eager_key(
        q, input_row_offsets, kv_collection, layer_idx, scale, output, scalar_args_buf,
        mask_str, local_window_size, per_token_scale_rope_aware, sparse_mla,
        fold_shared_index, q_scale_ptr, d_indices, indices_stride, topk_lengths,
        attn_sink_ptr, extra_k, extra_d_indices, extra_indices_stride,
        extra_topk_lengths, extra_scales_ptr, num_partitions_in, logical_indices, lse,
        stream, backend, batch_invariant)
    if hit is not None:
        key, ptrs, handle = hit
        try:
            plan = _eager_plans.get(key)
        except TypeError:   # an unhashable argument: validation reports it
            plan = hit = None
        if plan is not None:
            plan.launch_with(ptrs, handle, schedule=schedule)
            return
    plan, ptrs, handle = _build_plan(
        False, q, input_row_offsets, kv_collection, layer_idx, scale, output, scalar_args_buf,
        mask_str=mask_str, local_window_size=local_window_size,
        per_token_scale_rope_aware=per_token_scale_rope_aware, sparse_mla=sparse_mla,
        fold_shared_index=fold_shared_index, q_scale_ptr=q_scale_ptr, d_indices=d_indices,
        indices_stride=indices_stride, topk_lengths=topk_lengths, attn_sink_ptr=attn_sink_ptr,
        extra_k=extra_k, extra_d_indices=extra_d_indices, extra_indices_stride=extra_indices_stride,
        extra_topk_lengths=extra_topk_lengths, extra_scales_ptr=extra_scales_ptr,
        num_partitions_in=num_partitions_in, logical_indices=logical_indices, lse=lse,
        stream=stream, backend=backend, batch_invariant=batch_invariant, validate=validate)
    if hit is not None:
        _remember(_eager_plans, hit[0], plan)
    if plan.precheck is not None:
        plan.precheck(handle)
    plan.launch_with(ptrs, handle, schedule=schedule)


def plan_decode(*args, **kwargs) -> DecodePlan:
    """Validate and resolve a call of :func:`generic_flare_mla_decode_kv_cache_ragged`
    once (same arguments) and return its :class:`~mla_cupy.plan.DecodePlan`;
    ``plan.run(q, output, lse=None, stream=None)`` then launches it with nothing
    but pointer compares (docs/spec.md §12).

    ``q``, ``output`` and ``lse`` here fix the shapes, dtypes and device that
    ``run`` accepts; every other array is fixed by address (write new values
    into it, or plan again).  The plan allocates and owns its split-KV
    workspace.  ``stream`` becomes ``run``'s default (None: the current torch
    stream for torch q, else CuPy's current stream, at each run).  Compiles the
    kernels now, so a first ``run`` inside a CUDA-graph capture is safe."""
    bound = _ENTRY_SIGNATURE.bind(*args, **kwargs)
    bound.apply_defaults()
    if bound.arguments.pop("schedule") is not None:
        raise TypeError("plan_decode: schedule is an argument of plan.run (one a decode step), "
                        "not of the plan")
    plan, ptrs, _ = _build_plan(True, **bound.arguments)
    plan.bind(ptrs, bound.arguments["stream"])
    return plan


_ENTRY_SIGNATURE = inspect.signature(generic_flare_mla_decode_kv_cache_ragged)
plan_decode.__signature__ = _ENTRY_SIGNATURE.replace(return_annotation=DecodePlan)


def sparse_split_keys(sparse, num_partitions: int, split_len: int) -> int | None:
    """The most keys a split of a sparse call holds (a token's index rows, its extra
    stream's included, cut into num_partitions, or split_len each when that is fixed);
    None for a dense call.  compiler.narrow_auto_rows reads it."""
    if sparse is None:
        return None
    keys = sparse.indices_stride + (sparse.extra_indices_stride if sparse.extra_k is not None else 0)
    return min(keys, split_len) if split_len > 0 else -(-keys // num_partitions)


def _build_plan(
        owned_workspace: bool, q, input_row_offsets, kv_collection, layer_idx, scale, output,
        scalar_args_buf, *, mask_str, local_window_size, per_token_scale_rope_aware, sparse_mla,
        fold_shared_index, q_scale_ptr, d_indices, indices_stride, topk_lengths, attn_sink_ptr,
        extra_k, extra_d_indices, extra_indices_stride, extra_topk_lengths, extra_scales_ptr,
        num_partitions_in, logical_indices, lse, stream, backend, batch_invariant=False, validate=None):
    """Validate every argument (docs/spec.md §9), resolve the variant, kernels,
    grid and workspace; returns ``(DecodePlan, addresses of ARRAY_PARAMS, stream
    handle)``."""
    # ---- validate (nothing launched, output untouched, on any error) ----
    if not isinstance(kv_collection, PagedKVCollection):
        raise TypeError(f"kv_collection: expected a PagedKVCollection, got {type(kv_collection).__name__}")
    layout = kv_collection.layout
    mask = V.check_mask(mask_str, local_window_size)
    V.check_int("layer_idx", layer_idx, lo=0, hi=kv_collection.num_layers - 1)
    V.check_scale(scale)
    if V.check_flag("per_token_scale_rope_aware", per_token_scale_rope_aware) != (
            layout is Layout.FP8_ROPE_AWARE):
        raise ValueError(f"per_token_scale_rope_aware: expected {layout is Layout.FP8_ROPE_AWARE} "
                         f"for a {layout.value!r} cache, got {per_token_scale_rope_aware}")
    V.check_dense_only(sparse_mla, fold_shared_index, indices_stride, extra_indices_stride, dict(
        d_indices=d_indices, topk_lengths=topk_lengths, extra_k=extra_k,
        extra_d_indices=extra_d_indices, extra_topk_lengths=extra_topk_lengths,
        extra_scales_ptr=extra_scales_ptr, logical_indices=logical_indices))
    if sparse_mla and mask is Mask.SLIDING_WINDOW_CAUSAL:
        raise ValueError("mask_str: 'sliding_window_causal' is not supported with sparse_mla=True; "
                         "express windows as index lists")
    V.check_device_array("kv_collection.blocks", kv_collection.blocks,
                         dtypes=records.cache_dtypes(layout), ndim=4)
    V.check_device_array("kv_collection.lookup_table", kv_collection.lookup_table,
                         dtypes=("int32", "uint32"), ndim=2)
    V.check_device_array("kv_collection.cache_lengths", kv_collection.cache_lengths,
                         dtypes=("int32", "uint32"), ndim=1)
    V.check_q(q, layout, kv_collection.d_qk)
    num_tokens, num_heads = q.shape[0], q.shape[1]
    max_batch = kv_collection.batch_size
    batch_size = V.check_row_offsets(input_row_offsets, max_batch)
    V.check_output(output, layout, num_tokens, num_heads)
    V.check_lse(lse, num_tokens, num_heads)
    V.check_attn_sink(attn_sink_ptr, num_heads)
    q_fp8 = V.check_q_scale(q_scale_ptr, q, layout, num_tokens)
    main_scales = V.check_cache_scales("kv_collection.scales", kv_collection)
    sparse = None
    if sparse_mla:
        sparse = V.check_sparse(
            num_tokens=num_tokens, batch_size=batch_size, layer_idx=layer_idx, kv=kv_collection,
            d_indices=d_indices, indices_stride=indices_stride, topk_lengths=topk_lengths,
            logical_indices=logical_indices, extra_k=extra_k, extra_d_indices=extra_d_indices,
            extra_indices_stride=extra_indices_stride, extra_topk_lengths=extra_topk_lengths,
            extra_scales_ptr=extra_scales_ptr)
    if num_partitions_in is not None:
        check_num_partitions(num_partitions_in, "num_partitions_in")
    resolve_backend(backend)
    batch_invariant = V.check_flag("batch_invariant", batch_invariant)
    if batch_invariant:
        check_batch_invariant_split(scalar_args_buf, num_partitions_in)
    full_check = checked.resolve_validate(validate)
    host_batch, q_max_seq_len, num_partitions = _scalar_args_values(scalar_args_buf)
    if host_batch > batch_size:
        raise ValueError(f"scalar_args_buf: batch_size {host_batch} exceeds the "
                         f"{batch_size} sequences of input_row_offsets")
    # A fixed split length (a batch_invariant ScalarArgs) goes with its own count
    # only: num_partitions_in cuts the axis into that many splits instead.
    split_len = scalar_args_buf.split_len if isinstance(scalar_args_buf, ScalarArgs) else 0
    if num_partitions_in is not None:
        num_partitions = int(num_partitions_in)
        split_len = 0

    device_id = _device_id(q)
    V.check_same_device(dict(input_row_offsets=input_row_offsets, output=output, lse=lse,
                             attn_sink_ptr=attn_sink_ptr, blocks=kv_collection.blocks,
                             lookup_table=kv_collection.lookup_table,
                             cache_lengths=kv_collection.cache_lengths,
                             d_indices=d_indices, topk_lengths=topk_lengths,
                             logical_indices=logical_indices, extra_d_indices=extra_d_indices,
                             extra_topk_lengths=extra_topk_lengths,
                             extra_blocks=extra_k.blocks if extra_k is not None else None),
                        device_id)
    handle = _stream_handle(stream, q, device_id)
    arrays = call_arrays(q, output, lse, input_row_offsets, kv_collection, attn_sink_ptr,
                         scalar_args_buf, q_scale_ptr, main_scales, sparse)
    infos = [array_info(x) for x in arrays]
    ptrs = tuple(p for _, p in infos)
    check_aligned(ptrs)   # before a tensor map is encoded from them
    sig_q, sig_out = infos[0][0], infos[1][0]
    sig_lse = infos[2][0] if lse is not None else ("float32", (num_tokens, num_heads), True, sig_q[3])
    plan_args = dict(device_id=device_id, num_partitions=num_partitions,
                     run_signatures=(sig_q, sig_out, sig_lse),
                     refs=tuple(x for x in arrays[RUN_ARRAYS:] if x is not None) if owned_workspace
                     else ())
    if host_batch == 0 or num_tokens == 0 or q_max_seq_len == 0:
        return DecodePlan(variant="(nothing to launch)", decode=None, combine=None, noop=True,
                          **plan_args), ptrs, handle

    # The fitted tile may be smaller than the one a row group asks for (shared memory).
    per_token = sparse_mla and not fold_shared_index
    axes = dict(layout=layout, mask=mask, sparsity=Sparsity.SPARSE if sparse_mla else Sparsity.DENSE,
                fold=fold_shared_index, d_qk=kv_collection.d_qk, q_fp8=q_fp8)
    key = DecodeKey(tile_rows=64, **axes)
    group_rows = row_tiling(q_max_seq_len, num_heads, per_token=per_token).group_rows
    # batch_invariant: a sequence's schedule may not depend on the batch's q_max_seq_len,
    # so one token's heads decide it
    choice_rows = num_heads if batch_invariant else group_rows
    if runs_hopper(key, device_id, backend):
        key = hopper_key(key, kv_collection.page_size, choice_rows,
                         sparse_split_keys(sparse, num_partitions, split_len))
    elif resolve_backend(backend) == "hopper":
        raise ValueError(f"backend='hopper': needs an sm_90 device and a bf16/fp16 variant, got "
                         f"device {device_id} ({device_arch(device_id)}) and {key.name}")
    else:
        key = _fitting_key(device_id, row_tiling(q_max_seq_len, num_heads, per_token=per_token,
                                                 batch_invariant=batch_invariant).tile_rows, **axes)
    tiling = row_tiling(q_max_seq_len, num_heads, per_token=per_token, tile_rows=key.tile_rows)
    mode = launch_mode()
    segments = segment_ctas(key, tiling, scalar_args_buf, num_partitions_in, batch_invariant, split_len,
                            host_batch, num_heads)
    if segments and key.schedule is Schedule.SEESAW:
        key = dataclasses.replace(key, multicast=True, segments=True)
    if takes_evict_first(key, segments, host_batch, kv_collection.max_cache_length + q_max_seq_len):
        key = dataclasses.replace(key, evict_first=True)
    if not key.segments and takes_multicast(key, num_heads, num_partitions,
                                            kv_collection.max_cache_length + q_max_seq_len):
        key = dataclasses.replace(key, multicast=True)
    cfg = launch_config(key)   # (after the twins: the `_segments` twin's shared memory differs)
    budget = balanced_splits(key, mask, scalar_args_buf, num_partitions_in, batch_invariant, split_len,
                             segments, host_batch, tiling.grid_x, num_partitions)
    grid_splits = num_partitions
    if budget:
        # the budget of splits as a negative split_len; a sequence may take up to
        # BALANCED_GRID_FACTOR x the host's P of them (gridDim.y)
        split_len, grid_splits = -budget, min(MAX_PARTITIONS, BALANCED_GRID_FACTOR * num_partitions)
    with _on_device(device_id):
        decode = get_kernel(key, device_id)
        shape = combine_shape(max(SEGMENT_COMBINE_PARTS, num_partitions) if segments else grid_splits,
                              num_heads, num_tokens)
        combine = get_kernel(CombineKey(output_dtype_name(layout), shape.warp_rows), device_id) \
            if num_partitions > 1 or segments or budget else None
        o_part = lse_part = None
        seg_info = None
        if segments or budget:
            # segment mode: partial c + b of each share c and sequence b; balanced: split p
            # of every row.  Then the per-token seg_info (int32[T, 4]) in the lse
            # workspace's tail, from a 16-byte boundary: the kernels store int4 records
            # (an odd grid_splits x T x H faulted, misaligned address: session 17)
            part_rows = ((segments + host_batch - 1) * segment_rows(key) if segments
                         else grid_splits * num_tokens * num_heads)
            part_rows = -(-part_rows // 4) * 4
            rows = part_rows + 4 * num_tokens
        else:
            rows = num_partitions * num_tokens * num_heads if num_partitions > 1 else 0
        if rows:
            o_part, lse_part = (_owned_workspace(rows) if owned_workspace
                                else _workspace(device_id, handle, rows))
        given = dict(zip(ARRAY_PARAMS, (p if x is not None else None for x, p in zip(arrays, ptrs))))
        work = dict(o_part=array_info(o_part)[1] if o_part is not None else None,
                    lse_part=array_info(lse_part)[1] if lse_part is not None else None)
        if segments or budget:
            seg_info = work["lse_part"] + 4 * part_rows
        decode_launch = KernelLaunch(
            abi.DECODE, decode, decode.kernel.ptr,
            (segment_grid_x(key), segments, 1) if segments
            else (tiling.grid_x, grid_splits, decode_grid_z(key, tiling, grid_splits, host_batch)),
            (cfg.num_threads,), cfg.smem_bytes,
            decode_launch_args(given, work, kv_collection, sparse, tiling, layer_idx=layer_idx,
                               scale=scale, num_tokens=num_tokens, num_heads=num_heads,
                               window=local_window_size if mask is Mask.SLIDING_WINDOW_CAUSAL else 0,
                               split_len=split_len, segment_ctas=segments, host_batch=host_batch,
                               seg_info=seg_info),
            mode, kv_map_source=kv_map_source(key, kv_collection))
        combine_launch = None
        if combine is not None:
            combine_launch = KernelLaunch(
                abi.COMBINE, combine, combine.kernel.ptr, shape.grid, shape.block,
                0, combine_launch_args(given, work, num_heads=num_heads, num_tokens=num_tokens,
                                       num_partitions=grid_splits, seg_info=seg_info,
                                       segment_rows=segment_rows(key) if segments
                                       else num_tokens * num_heads if budget else 0), mode,
                programmatic=arch_number(compiler.device_arch(device_id)) >= 90)

    def precheck(call_handle, *, fold=fold_shared_index, window=local_window_size):
        """Checked mode: the device check of this call's values; raises before the
        decode (the only device-to-host copy of the call)."""
        arrays = dict(input_row_offsets=to_cupy(input_row_offsets, "input_row_offsets"),
                      scalar_args=to_cupy(call_arrays_buffer(scalar_args_buf), "scalar_args_buf"),
                      cache_lengths=to_cupy(kv_collection.cache_lengths, "kv_collection.cache_lengths"),
                      lookup_table=to_cupy(kv_collection.lookup_table, "kv_collection.lookup_table"))
        checked.check_on_device(arrays, kv_collection, sparse, stream=external_stream(call_handle),
                                device_id=device_id, num_tokens=num_tokens, host_batch=host_batch,
                                q_max_seq_len=q_max_seq_len, mask=mask, window=window, fold=fold)

    ctas = schedule_records(key, segments, decode_launch.grid)
    schedule_key = decode_schedule.ScheduleKey(   # (the array addresses: at each launch)
        device_id=device_id, kernel=key.name, ctas=ctas, host_batch=host_batch, split_len=split_len,
        window=local_window_size if mask is Mask.SLIDING_WINDOW_CAUSAL else 0,
        page_size=kv_collection.page_size, input_row_offsets=0, cache_lengths=0,
        scalar_args=0) if ctas else None
    return DecodePlan(variant=key.name, decode=decode_launch, combine=combine_launch, noop=False,
                      workspace=(o_part, lse_part) if o_part is not None else None,
                      precheck=precheck if full_check else None, schedule_key=schedule_key,
                      **plan_args), ptrs, handle


def mla_decode(q, kv_collection, input_row_offsets, *, layer_idx=0, scale=None, mask="causal",
               window=None, attn_sink=None, num_partitions=None, return_lse=False, out=None,
               lse=None, q_max_seq_len=None, stream=None, **sparse_and_fp8_args):
    """Convenient MLA decode: allocates ``out`` (CuPy, or torch when q is torch),
    packs the scalar args and returns ``out`` or ``(out, lse)``.

    ``scale`` defaults to ``D_qk ** -0.5``; ``window`` is the sliding-window
    length for ``mask="sliding_window_causal"``.  ``q_max_seq_len`` (the most
    query tokens of any sequence) is read from ``input_row_offsets`` when not
    given; pass it to avoid that device-to-host copy.  ``lse``: a caller's float32
    ``[T, H]`` buffer to write the LSE into (allocated when None and
    ``return_lse``).  Further keyword
    arguments go to :func:`generic_flare_mla_decode_kv_cache_ragged` (among them
    ``schedule``, a :class:`~mla_cupy.DecodeSchedule` shared by a decode step's calls).
    """
    if not isinstance(kv_collection, PagedKVCollection):
        raise TypeError(f"kv_collection: expected a PagedKVCollection, got {type(kv_collection).__name__}")
    if scale is None:
        scale = kv_collection.d_qk ** -0.5
    if q is None or not hasattr(q, "shape"):
        raise TypeError(f"q: expected a CUDA array [T, H, D], got {type(q).__name__}")
    if len(q.shape) != 3:
        raise ValueError(f"q: expected [T, H, D], got {getattr(q, 'shape', type(q).__name__)}")
    num_tokens, num_heads = q.shape[0], q.shape[1]
    V.check_row_offsets(input_row_offsets, kv_collection.batch_size)
    if not isinstance(mask, str):
        raise TypeError(f"mask: expected one of {[m.value for m in Mask]}, got {type(mask).__name__}")
    return_lse = V.check_flag("return_lse", return_lse)
    if q_max_seq_len is None:   # the documented device-to-host copy
        import cupy
        offs = to_cupy(input_row_offsets, "input_row_offsets").astype(np.int64)
        q_max_seq_len = int(cupy.diff(offs).max().get()) if offs.shape[0] > 1 else 0
    batch_size = input_row_offsets.shape[0] - 1
    layout = kv_collection.layout
    out_dt = records.output_dtype(layout)
    torch_io = is_torch(q)
    if out is None:
        out = _empty_like_io(q, (num_tokens, num_heads, D_V), out_dt, torch_io)
    if lse is None and return_lse:
        lse = _empty_like_io(q, (num_tokens, num_heads), "float32", torch_io)
    kw = sparse_and_fp8_args
    for idx_name, stride_name in (("d_indices", "indices_stride"),
                                  ("extra_d_indices", "extra_indices_stride")):
        shape = getattr(kw.get(idx_name), "shape", None)
        if shape and not kw.get(stride_name):   # anything else is reported by validation
            kw[stride_name] = int(shape[-1])
    # A new buffer is uploaded in the order of the call's stream (given, or torch's
    # current one): a non-blocking stream does not wait for CuPy's current stream,
    # so its decode could read the buffer before the copy lands.
    def upload_order():
        if stream is None and not torch_io:
            return contextlib.nullcontext()
        return call_stream(stream, q)

    sa = shared_scalar_args(batch_size, q_max_seq_len, kv_collection.max_cache_length, num_heads,
                            layout=layout.value, num_partitions=num_partitions,
                            sparse_mla=kw.get("sparse_mla", False),
                            indices_stride=kw.get("indices_stride", 0),
                            extra_indices_stride=kw.get("extra_indices_stride", 0),
                            fold_shared_index=kw.get("fold_shared_index", False),
                            window=window if mask == Mask.SLIDING_WINDOW_CAUSAL else None,
                            backend=kw.get("backend"),
                            batch_invariant=kw.get("batch_invariant", False), upload_order=upload_order)
    sparse_and_fp8_args.setdefault("per_token_scale_rope_aware",
                                   kv_collection.layout is Layout.FP8_ROPE_AWARE)
    generic_flare_mla_decode_kv_cache_ragged(
        q, input_row_offsets, kv_collection, layer_idx, scale, out, sa, mask_str=mask,
        local_window_size=-1 if window is None else window, attn_sink_ptr=attn_sink, lse=lse,
        stream=stream, **sparse_and_fp8_args)
    return (out, lse) if return_lse else out


# ---------------------------------------------------------------- helpers

def _scalar_args_values(buf) -> tuple[int, int, int]:
    if isinstance(buf, ScalarArgs):
        V.check_int("scalar_args_buf.batch_size", buf.batch_size, lo=0)
        V.check_int("scalar_args_buf.q_max_seq_len", buf.q_max_seq_len, lo=0)
        check_num_partitions(buf.num_partitions, "scalar_args_buf.num_partitions")
        return buf.batch_size, buf.q_max_seq_len, buf.num_partitions
    V.check_device_array("scalar_args_buf", buf, dtypes=("int64",), shape=(3,))
    from .arrays import to_host_int
    host = to_host_int(buf)   # documented slow path: one device-to-host copy
    if host[0] < 0 or host[1] < 0:
        raise ValueError(f"scalar_args_buf: expected batch_size, q_max_seq_len >= 0, got {host.tolist()}")
    check_num_partitions(int(host[2]))
    return int(host[0]), int(host[1]), int(host[2])


def call_stream(stream, like):
    """The stream a call on ``like``'s device runs on (plan.stream_handle's rule)
    as a CuPy stream object, for work issued through CuPy."""
    return external_stream(_stream_handle(stream, like, _device_id(like)))


def call_arrays_buffer(scalar_args_buf):
    """The device buffer of a ScalarArgs, or the raw buffer itself."""
    return scalar_args_buf.buffer if isinstance(scalar_args_buf, ScalarArgs) else scalar_args_buf


def call_arrays(q, output, lse, offsets, kv, sink, scalar_args_buf, q_scale, main_scales,
                sparse) -> tuple:
    """The device arrays of a validated call, in the order of plan.ARRAY_PARAMS."""
    buf = call_arrays_buffer(scalar_args_buf)
    sp = sparse
    ek = sp.extra_k if sp is not None else None
    return (q, output, lse, offsets, kv.blocks, kv.lookup_table, kv.cache_lengths, sink, buf,
            q_scale, main_scales,
            *((sp.d_indices, sp.topk_lengths, sp.logical_indices, ek.blocks if ek is not None else None,
               sp.extra_d_indices, sp.extra_topk_lengths, sp.extra_scales) if sp is not None
              else (None,) * 7))


def eager_key(q, offsets, kv, layer_idx, scale, output, sa, mask_str, window, rope_aware,
              sparse_mla, fold, q_scale, d_indices, indices_stride, topk_lengths, sink, extra_k,
              extra_d_indices, extra_stride, extra_topk_lengths, extra_scales_ptr,
              num_partitions_in, logical_indices, lse, stream, backend, batch_invariant=False):
    """``(key, addresses, stream handle)`` of an entry-point call, or None when it
    cannot take the fast path (a raw scalar buffer, an argument that is not a
    CUDA array where one is read, an unusable stream: the full path reports it).

    The key holds everything validation and planning read: each array's
    signature (plan.array_info), the collections' layout and page size, every
    scalar with its type (1 and True differ), the host values of the
    ScalarArgs, the backend and launch environment variables and the stream
    (the shared workspace is per stream).  Equal keys get equal plans; the
    addresses are written into the plan's slots at each call."""
    if type(sa) is not ScalarArgs or type(kv) is not PagedKVCollection:
        return None
    if extra_k is None:
        extra_blocks = extra_scales = None
        extra_part = None
    elif type(extra_k) is PagedKVCollection:
        extra_blocks, extra_scales = extra_k.blocks, extra_k.scales
        extra_part = (extra_k.layout, extra_k.page_size, extra_scales is None)
    else:
        return None
    if extra_scales is None:
        extra_scales = extra_scales_ptr
    common = (q, output, lse, offsets, kv.blocks, kv.lookup_table, kv.cache_lengths, sink, sa.buffer,
              q_scale, kv.scales)
    if (d_indices is None and topk_lengths is None and logical_indices is None and extra_blocks is None
            and extra_d_indices is None and extra_topk_lengths is None and extra_scales is None):
        sigs, ptrs = zip(*map(array_info, common))   # dense: the sparse arrays' part is constant
        sigs, ptrs = sigs + _NO_SPARSE_SIGS, ptrs + _NO_SPARSE_PTRS
    else:
        sigs, ptrs = zip(*map(array_info, common + (
            d_indices, topk_lengths, logical_indices, extra_blocks, extra_d_indices,
            extra_topk_lengths, extra_scales)))
    if sigs[0] is None or NOT_A_DEVICE_ARRAY in sigs:
        return None
    try:
        handle = _stream_handle(stream, q, sigs[0][3])
    except Exception:   # noqa: BLE001 - the full path validates first, then reports it
        return None
    key = (sigs, kv.layout, kv.page_size, extra_part, extra_scales_ptr is None,
           type(layer_idx), layer_idx, type(scale), scale, type(mask_str), mask_str,
           type(window), window, type(rope_aware), rope_aware, type(sparse_mla), sparse_mla,
           type(fold), fold, type(indices_stride), indices_stride, type(extra_stride), extra_stride,
           type(num_partitions_in), num_partitions_in, type(sa.batch_size), sa.batch_size,
           type(sa.q_max_seq_len), sa.q_max_seq_len, type(sa.num_partitions), sa.num_partitions,
           backend, environment.get(environment.BACKEND), environment.get(environment.LAUNCH),
           environment.get(environment.HOPPER_LOADS), environment.get(environment.HOPPER_SCHEDULE),
           environment.get(environment.SPLIT), handle,
           type(batch_invariant), batch_invariant, sa.batch_invariant, sa.split_len, sa.split_chosen)
    return key, ptrs, handle   # unhashable (a list where a scalar belongs): the lookup says so


_NO_SPARSE_SIGS = (None,) * 7
_NO_SPARSE_PTRS = (0,) * 7


# Plans of the entry points by eager_key; they hold no caller arrays (only
# kernels and the shared workspace), so forgetting one frees nothing a
# captured graph uses.
EAGER_PLANS_MAX = 256
_eager_plans: dict = {}


def _remember(memo: dict, key, value) -> None:
    while len(memo) >= EAGER_PLANS_MAX:
        memo.pop(next(iter(memo)), None)
    memo[key] = value


def kv_map_source(key: DecodeKey, kv) -> KvMapSource | None:
    """The TMA tensor-map rule of a variant's launch, None when its kernel loads
    by cp.async only (render.uses_kv_map) or the page size fits no TMA box."""
    if not uses_kv_map(key):
        return None
    source = KvMapSource(kv.layout.value, kv.num_blocks, kv.num_layers, kv.page_size, kv.d_qk,
                         required=needs_kv_map(key), box_keys=tma_box_keys(key))
    return source if source.rows else None


# Segment mode's combine block: sized for the partials a sequence has, at least a
# few (a ragged batch's sequences span two or three equal shares), and as many as
# the split the host chose (an even batch's aligned cut gives each sequence about
# that many pieces: 16 for 8 sequences of 8K keys); more are merged in turns.
SEGMENT_COMBINE_PARTS = 2


def schedule_records(key: DecodeKey, segments: int, grid) -> int:
    """The records a DecodeSchedule keeps for this decode (0: none; docs/spec.md §12):
    one a share in segment mode (the narrow and ring kernels' SharesWalk), one a CTA for
    the dense ring and seesaw kernels in split mode (cta_work: split length, place,
    sequence)."""
    if segments:
        return segments
    if (key.backend is Backend.HOPPER and key.schedule in (Schedule.RING, Schedule.SEESAW)
            and key.sparsity is Sparsity.DENSE):
        return grid[0] * grid[1] * grid[2]
    return 0


def segment_ctas(key: DecodeKey, tiling, scalar_args_buf, num_partitions_in, batch_invariant: bool,
                 split_len: int, host_batch: int, num_heads: int) -> int:
    """The shares of segment mode (docs/spec.md section 7), 0 for splits: the narrow
    kernel over a 16-bit cache, or the ring's over a dense 16-bit cache without a
    window (render.ring_segments) for batches of two or more (MLA_CUPY_SPLIT=segments:
    one too), a sequence's rows in one tile; or, under MLA_CUPY_SPLIT=segments only
    (against `auto`'s balanced splits: ragged batches ~1% faster, even ones ~2% slower,
    tools/results/NOTES.md session 40), the seesaw's `_segments` twin
    (variants.segments_supports: D_QK 576, null or causal mask) where a sequence's rows
    fill its pair of row tiles (one token of a multiple of 128 heads), one cluster of two
    CTAs a share; and a split the dispatcher was free to choose (a ScalarArgs that chose
    num_partitions, no num_partitions_in, not batch_invariant: a share depends on the
    whole batch).  One CTA an SM (the kernels' shared memory), one share a CTA (a cluster
    for the twin).  MLA_CUPY_SPLIT=partitions keeps the splits.  (H200, the ring, against
    balanced splits: DeepSeek b64 ragged -5 to -6%, b8 h64 -9%, even batches equal, b1 h64
    +3%: tools/results/NOTES.md session 33.  The twin against balanced splits: DeepSeek
    h128 ragged -1.2 to -1.7%, b32 h128 -2 to +1%, b128 h128 +0.8 to +2.5%: sessions
    39-40.)"""
    choice = environment.get(environment.SPLIT) or "auto"
    if choice not in SPLIT_CHOICES:
        raise ValueError(f"{environment.SPLIT}: expected one of {SPLIT_CHOICES}, got {choice!r}")
    twin = (key.schedule is Schedule.SEESAW and num_heads % (2 * key.tile_rows) == 0
            and segments_supports(dataclasses.replace(key, multicast=True))
            and tiling.grid_x == 2 and tiling.group_rows == 2 * key.tile_rows)
    takes_segments = key.schedule is Schedule.NARROW or (
        key.backend is Backend.HOPPER and (twin or (key.schedule is Schedule.RING and ring_segments(key)))
        and (choice == "segments" or (host_batch >= 2 and not twin)))
    share_ctas = 2 if twin else 1   # (segment_grid_x of the key the dispatcher then takes)
    if (choice == "partitions" or not takes_segments or records.is_byte_record(key.layout)
            or tiling.grid_x != share_ctas or split_len or num_partitions_in is not None
            or batch_invariant or not isinstance(scalar_args_buf, ScalarArgs) or not scalar_args_buf.split_chosen):
        return 0
    return sm_count_of_current_device() // share_ctas


def segment_grid_x(key: DecodeKey) -> int:
    """Segment mode's CTAs a share: the `_segments` twin's cluster of two, else one."""
    return 2 if key.segments else 1


def segment_rows(key: DecodeKey) -> int:
    """Rows of a segment's partial: the decode's tile, or both row tiles of the
    `_segments` twin's cluster."""
    return segment_grid_x(key) * key.tile_rows


SPLIT_CHOICES = ("auto", "partitions", "segments")

# Balanced splits (docs/spec.md section 7): gridDim.y is this many times the host's P,
# the even splits of a ragged batch's sequences.  (H200, DeepSeek lengths N(8192,
# 4096), forced P: h64 313 us at P=2, 210 at 4; h128 505 at P=1, 332 at 2; the
# device's rule at 2P: h64 216: tools/results/NOTES.md sessions 16 and 18.)
BALANCED_GRID_FACTOR = 2


def balanced_splits(key: DecodeKey, mask, scalar_args_buf, num_partitions_in, batch_invariant: bool,
                    split_len: int, segments: int, host_batch: int, grid_x: int, num_partitions: int) -> int:
    """The budget of splits of balanced mode (host_batch x P, P the host's choice),
    0 where it does not apply.  The kernel reads the batch's keys on the device: within
    1/16 of their mean, splits of sum / budget keys (a uniform batch: P each, the
    first P of every sequence launched first); ragged, every sequence in grid y's
    even splits (common/sequence.cuh.j2).  For the Hopper seesaw kernel over dense
    16-bit caches without a window, when the split was the dispatcher's to choose
    (as segment mode, which the narrow and ring kernels run instead), and the host's grid
    (host_batch x grid_x row tiles x P) fits one wave, one CTA an SM: there the
    longest sequence sets the time.  Over several waves longest-first ordering
    already balances a ragged batch, and the extra splits cost more than they save
    (H200, b128 s_q 2 h128 lengths N(8192, 4096): 1137 us balanced, 1075 not;
    tools/results/NOTES.md).  MLA_CUPY_SPLIT=partitions keeps the host's P for every
    sequence."""
    choice = environment.get(environment.SPLIT) or "auto"
    if (choice == "partitions" or key.backend is not Backend.HOPPER
            or key.schedule is not Schedule.SEESAW or key.sparsity is not Sparsity.DENSE
            or records.is_byte_record(key.layout) or mask is Mask.SLIDING_WINDOW_CAUSAL or segments
            or split_len or num_partitions_in is not None or batch_invariant or host_batch < 2
            or host_batch * grid_x * num_partitions > sm_count_of_current_device()
            or not isinstance(scalar_args_buf, ScalarArgs) or not scalar_args_buf.split_chosen):
        return 0
    return host_batch * num_partitions


def decode_grid_z(key: DecodeKey, tiling, grid_splits: int, host_batch: int) -> int:
    """The decode grid's z: the host's batch, or for the pair schedule (clusters of two
    row tiles) schedule.pair_grid_z, whose CTAs run the virtual z beyond it as later jobs."""
    if key.schedule is Schedule.PAIR:
        return pair_grid_z(host_batch, tiling.grid_x // 2 * grid_splits, sm_count_of_current_device())
    return host_batch


def decode_launch_args(given: dict, work: dict, kv, sparse, tiling, *, layer_idx, scale,
                       num_tokens, num_heads, window, split_len=0, segment_ctas=0, host_batch=0,
                       seg_info=None) -> dict:
    """The decode kernel's arguments by ABI name (abi.DECODE): ``given`` the
    call's array addresses by ABI name (None = null), ``work`` the workspace's
    (o_part, lse_part); ``sparse`` is validate.SparseArgs or None (dense)."""
    ek = sparse.extra_k if sparse is not None else None
    return dict(
        given, **work, num_heads=num_heads, num_layers=kv.num_layers, layer_idx=layer_idx,
        page_size=kv.page_size, lookup_stride=kv.lookup_table.shape[1], window=window,
        num_tokens=num_tokens, scale_log2=scale * LOG2E, group_rows=tiling.group_rows,
        group_tiles=tiling.group_tiles, split_len=split_len, segment_ctas=segment_ctas,
        host_batch=host_batch, seg_info=seg_info, schedule=None, schedule_mode=decode_schedule.FIND,
        indices_stride=sparse.indices_stride if sparse is not None else 0,
        extra_stride=sparse.extra_indices_stride if sparse is not None else 0,
        main_rows_total=kv.num_blocks * kv.page_size,
        extra_page_size=ek.page_size if ek is not None else 1,
        extra_num_layers=ek.num_layers if ek is not None else 1,
        extra_rows_total=ek.num_blocks * ek.page_size if ek is not None else 0,
        kv_box_rows=0, kv_map=NO_MAP)   # KernelLaunch's kv_map_source sets them for TMA kernels


def combine_launch_args(given: dict, work: dict, *, num_heads, num_tokens, num_partitions, seg_info=None,
                        segment_rows=0) -> dict:
    """The combine kernel's arguments by ABI name (abi.COMBINE)."""
    return dict({name: given[name] for name in ("attn_sink", "input_row_offsets", "scalar_args",
                                                "out", "lse")},
                **work, num_heads=num_heads, num_tokens=num_tokens, num_partitions_in=num_partitions,
                seg_info=seg_info, segment_rows=segment_rows)


def _on_device(device_id: int):
    import cupy
    return cupy.cuda.Device(device_id)


def _device_id(x) -> int:
    if is_torch(x):
        return x.device.index
    dev = getattr(x, "device", None)
    if dev is not None and hasattr(dev, "id"):
        return dev.id
    import cupy
    return cupy.cuda.runtime.getDevice()


_stream_handle = stream_handle


@functools.lru_cache(maxsize=None)
def _smem_limit(device_id: int) -> int:
    from cupy.cuda import runtime
    return runtime.deviceGetAttribute(runtime.cudaDevAttrMaxSharedMemoryPerBlockOptin, device_id)


def _fitting_key(device_id, tile_rows, **axes) -> DecodeKey:
    """The chosen tile, or the next smaller one whose shared memory fits the
    device (an A100's 163 KiB takes 32-row tiles where an H200 runs 64)."""
    limit = _smem_limit(device_id)
    for rows in sorted((r for r in TILE_ROWS if r <= tile_rows), reverse=True):
        key = DecodeKey(tile_rows=rows, **axes)
        if launch_config(key).smem_bytes <= limit:
            return key
    raise ValueError(f"{key.name}: needs {launch_config(key).smem_bytes} bytes of shared memory "
                     f"per block, device {device_id} allows {limit}")


# Split-KV partials of the entry points live in one grow-only buffer per
# (device, stream): launches on one stream are ordered.  A buffer that is
# outgrown is retired, not freed, so a CUDA graph captured earlier keeps valid
# pointers.  Explicit plans (plan_decode) own theirs.
_workspaces: dict = {}
_retired_workspaces: list = []
_workspace_lock = threading.Lock()


def _workspace(device_id, stream_handle: int, rows: int):
    key = (device_id, stream_handle)
    with _workspace_lock:
        ws = _workspaces.get(key)
        if ws is None or ws[1].size < rows:
            if ws is not None:
                _retired_workspaces.append(ws)
            ws = _workspaces[key] = _owned_workspace(rows)
    return ws


def _owned_workspace(rows: int):
    """``(o_part [rows * 512], lse_part [rows])`` float32 on the current device."""
    import cupy
    return cupy.empty(rows * D_V, dtype=np.float32), cupy.empty(rows, dtype=np.float32)


def _empty_like_io(q, shape, dtype_name, torch_io):
    if torch_io:
        import torch
        return torch.empty(shape, dtype=getattr(torch, dtype_name), device=q.device)
    import cupy
    return cupy.empty(shape, dtype=_numpy_dtype(dtype_name))


@functools.lru_cache(maxsize=None)
def _numpy_dtype(dtype_name: str):
    import ml_dtypes
    return np.dtype(ml_dtypes.bfloat16) if dtype_name == "bfloat16" else np.dtype(dtype_name)
