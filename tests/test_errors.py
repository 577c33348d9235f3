"""docs/spec.md §9: bad arguments raise before anything is launched (CPU only, no GPU).

Validation in ``generic_flare_mla_decode_kv_cache_ragged`` runs before CuPy
touches a device, so the inputs here are small fake device arrays that carry
only metadata (shape, dtype, strides, flags, ``__cuda_array_interface__``).
Every case starts from a *valid* baseline call and mutates exactly one thing;
it must raise the right exception type with a message naming the argument.

The ``past_validation`` fixture replaces the first post-validation steps of
the dispatcher (device lookup, stream, kernel fetch, launch arguments) by a
sentinel exception, so a mutation that slipped through validation shows up as
``PastValidation`` and nothing is ever launched, with or without a GPU.
"""
from __future__ import annotations

import os
import re
import subprocess
import sys
import traceback
import types

import ml_dtypes
import numpy as np
import pytest

from conftest import HAS_GPU
from mla_cupy import dispatch
from mla_cupy.cache import PagedKVCollection
from mla_cupy.dispatch import generic_flare_mla_decode_kv_cache_ragged, mla_decode
from mla_cupy.scalar_args import ScalarArgs, check_num_partitions, pack_scalar_args
from mla_cupy.testing import FakeCudaArray
from mla_cupy.variants import Layout

BF16 = ml_dtypes.bfloat16
REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))

B, PAGES, H, T, PAGE = 2, 2, 16, 3, 64
NUM_BLOCKS = 4


def fake(shape, dtype, **kw):
    """A metadata-only CUDA array without a ``device`` (the dispatcher asks CUDA for it)."""
    return FakeCudaArray(shape, dtype, None, **kw)


def make_kv(blocks=None, lookup=None, lengths=None, page_size=PAGE, **kw):
    kw.setdefault("max_cache_length", 100)
    return PagedKVCollection(
        fake([NUM_BLOCKS, 1, PAGE, 576], BF16) if blocks is None else blocks,
        fake([B, PAGES], np.int32) if lookup is None else lookup,
        fake([B], np.int32) if lengths is None else lengths,
        page_size, **kw)


def scalar_args(batch_size=B, q_max_seq_len=2, num_partitions=1):
    return ScalarArgs(buffer=fake([3], np.int64), batch_size=batch_size,
                      q_max_seq_len=q_max_seq_len, num_partitions=num_partitions)


def baseline() -> dict:
    """A valid dense bf16 call: 2 sequences, 3 tokens, 16 heads, one layer."""
    return dict(q=fake([T, H, 576], BF16), input_row_offsets=fake([B + 1], np.uint32),
                kv_collection=make_kv(), layer_idx=0, scale=576 ** -0.5,
                output=fake([T, H, 512], BF16), scalar_args_buf=scalar_args())


class PastValidation(Exception):
    """Raised where the dispatcher first needs the GPU (after every check)."""


@pytest.fixture
def past_validation(monkeypatch):
    def stop(*a, **k):
        raise PastValidation
    for name in ("_device_id", "_stream_handle", "get_kernel", "_workspace", "_fitting_key"):
        monkeypatch.setattr(dispatch, name, stop)


def call(args):
    generic_flare_mla_decode_kv_cache_ragged(**args)


# ------------------------------------------------------------------ baseline

def test_baseline_passes_validation(past_validation):
    with pytest.raises(PastValidation):
        call(baseline())


@pytest.mark.parametrize("extra", [
    dict(mask_str="null"), dict(mask_str="causal", local_window_size=None),
    dict(mask_str="sliding_window_causal", local_window_size=1),
    dict(lse=fake([T, H], np.float32), attn_sink_ptr=fake([H], np.float32)),
    dict(num_partitions_in=65535), dict(layer_idx=np.int64(0), scale=np.float32(0.1)),
    dict(input_row_offsets=fake([1], np.int32), scalar_args_buf=scalar_args(batch_size=0)),
    dict(input_row_offsets=fake([B], np.int32), scalar_args_buf=scalar_args(batch_size=1)),
    dict(scalar_args_buf=scalar_args(batch_size=1)),              # replay with a smaller batch
    dict(q=fake([0, H, 576], BF16), output=fake([0, H, 512], BF16)),  # T = 0
    dict(q=fake([T, 1, 576], BF16), output=fake([T, 1, 512], BF16)),
    dict(q=fake([T, 128, 576], BF16), output=fake([T, 128, 512], BF16)),
    # sparse mode (docs/spec.md §5); indices_stride 0 takes d_indices.shape[1]
    dict(sparse_mla=True, d_indices=fake([T, 8], np.int32), indices_stride=8),
    dict(sparse_mla=True, d_indices=fake([T, 8], np.int32)),
    dict(sparse_mla=True, mask_str="null", fold_shared_index=True,
         d_indices=fake([T, 8], np.int32), topk_lengths=fake([B], np.int32),
         logical_indices=fake([T, 8], np.int32)),
    dict(sparse_mla=True, d_indices=fake([T, 8], np.int32), extra_k=make_kv(page_size=1,
         blocks=fake([5, 1, 1, 576], BF16)), extra_d_indices=fake([T, 4], np.int32),
         extra_indices_stride=4, extra_topk_lengths=fake([B], np.int32)),
    # fp8 layouts: e4m3 q with per-token scales; DeepSeek-V3.2 record with bf16 q
    dict(kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 576], np.uint8)),
         q=fake([T, H, 576], np.uint8), q_scale_ptr=fake([T], np.float32)),
    dict(kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 656], np.uint8))),
    dict(kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                               scales=fake([NUM_BLOCKS, 1, PAGE], np.float32)),
         q=fake([T, H, 640], np.uint8), per_token_scale_rope_aware=True,
         q_scale_ptr=fake([T], np.float32)),
    # rope-aware extra stream whose per-token scales come from extra_scales_ptr
    dict(kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                               scales=fake([NUM_BLOCKS, 1, PAGE], np.float32)),
         q=fake([T, H, 640], np.uint8), per_token_scale_rope_aware=True, sparse_mla=True,
         d_indices=fake([T, 8], np.int32),
         extra_k=make_kv(page_size=2, blocks=fake([5, 1, 2, 640], np.uint8)),
         extra_d_indices=fake([T, 4], np.int32), extra_scales_ptr=fake([5, 1, 2], np.float32)),
    # ... given 2-D, as for a one-layer cache (PagedKVCollection's rule)
    dict(kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                               scales=fake([NUM_BLOCKS, 1, PAGE], np.float32)),
         q=fake([T, H, 640], np.uint8), per_token_scale_rope_aware=True, sparse_mla=True,
         d_indices=fake([T, 8], np.int32),
         extra_k=make_kv(page_size=2, blocks=fake([5, 1, 2, 640], np.uint8)),
         extra_d_indices=fake([T, 4], np.int32), extra_scales_ptr=fake([5, 2], np.float32)),
], ids=lambda d: ",".join(d))
def test_valid_variations_pass_validation(past_validation, extra):
    """Guards against the error cases passing for the wrong reason."""
    with pytest.raises(PastValidation):
        call(baseline() | extra)


def test_raw_scalar_args_buffer_passes_validation(past_validation, monkeypatch):
    """A raw int64[3] buffer is read back once (the documented slow path)."""
    import mla_cupy.arrays as arrays
    seen = []
    monkeypatch.setattr(arrays, "to_host_int",
                        lambda x: seen.append(x) or np.array([B, 2, 3], dtype=np.int64))
    buf = fake([3], np.int64)
    with pytest.raises(PastValidation):
        call(baseline() | dict(scalar_args_buf=buf))
    assert seen == [buf]
    # values read back are checked too
    monkeypatch.setattr(arrays, "to_host_int", lambda x: np.array([B, 2, 0], dtype=np.int64))
    with pytest.raises(ValueError, match="^num_partitions"):
        call(baseline() | dict(scalar_args_buf=buf))
    monkeypatch.setattr(arrays, "to_host_int", lambda x: np.array([B + 1, 2, 1], dtype=np.int64))
    with pytest.raises(ValueError, match="^scalar_args_buf"):
        call(baseline() | dict(scalar_args_buf=buf))


def test_valid_layer_and_fp16_cache_pass_validation(past_validation):
    kv = make_kv(blocks=fake([NUM_BLOCKS, 3, PAGE, 512], np.float16))
    args = baseline() | dict(kv_collection=kv, layer_idx=2, q=fake([T, H, 512], np.float16),
                             output=fake([T, H, 512], np.float16))
    with pytest.raises(PastValidation):
        call(args)


@pytest.mark.skipif(HAS_GPU, reason="checks what a GPU-less machine raises")
def test_baseline_without_gpu_fails_at_first_device_query():
    """Without a GPU the valid call gets through every check and fails where it
    first asks CUDA for the current device: a CUDARuntimeError, not a
    TypeError/ValueError/NotImplementedError from validation."""
    from cupy_backends.cuda.api.runtime import CUDARuntimeError

    with pytest.raises(CUDARuntimeError) as info:
        call(baseline())
    assert not isinstance(info.value, (TypeError, ValueError, NotImplementedError))
    frames = [f.name for f in traceback.extract_tb(info.tb)]
    assert "_device_id" in frames, frames


_NO_CUPY_SCRIPT = """
import sys, types
import ml_dtypes, numpy as np
from mla_cupy import PagedKVCollection, ScalarArgs, generic_flare_mla_decode_kv_cache_ragged as f

def fake(shape, dt):
    return types.SimpleNamespace(shape=tuple(shape), dtype=np.dtype(dt), strides=None,
                                 flags=types.SimpleNamespace(c_contiguous=True),
                                 __cuda_array_interface__={})

bf16 = ml_dtypes.bfloat16
kv = PagedKVCollection(fake([4, 1, 64, 576], bf16), fake([2, 2], np.int32),
                       fake([2], np.int32), 64, max_cache_length=100)
sa = ScalarArgs(fake([3], np.int64), 2, 2, 1)
try:   # the last check of all: output's shape
    f(fake([3, 16, 576], bf16), fake([3], np.uint32), kv, 0, 0.05, fake([3, 16, 576], bf16), sa)
except ValueError as e:
    assert str(e).startswith("output:"), e
else:
    raise SystemExit("no error")
raise SystemExit(3 if "cupy" in sys.modules else 0)
"""


def test_validation_error_does_not_import_cupy():
    """validate.py and cache.py need no CuPy: a call that fails its last check
    has not imported it."""
    env = dict(os.environ, PYTHONPATH=REPO)
    r = subprocess.run([sys.executable, "-c", _NO_CUPY_SCRIPT], cwd=REPO, env=env,
                       capture_output=True, text=True, timeout=60)
    assert r.returncode == 0, (r.returncode, r.stderr)


# ------------------------------------------------------- one mutation per case

def _set(**kw):
    return lambda a: a.update(kw)


EXTRA_IDX = fake([T, 4], np.int32)


def _sparse(**kw):
    """Sparse mode with valid [T, 8] indices, plus ``kw``."""
    return _set(**{"sparse_mla": True, "d_indices": fake([T, 8], np.int32)} | kw)


def _kv(**kw):
    return lambda a: a.update(kv_collection=make_kv(**kw))


def _rope_aware(scales="default", **kw):
    """A valid fp8_rope_aware call (640-byte rows and q, per-token scales), then ``kw``."""
    if isinstance(scales, str):
        scales = fake([NUM_BLOCKS, 1, PAGE], np.float32)

    def mutate(a):
        a.update(kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8)),
                 q=fake([T, H, 640], np.uint8), per_token_scale_rope_aware=True)
        if scales is not None:   # PagedKVCollection checks scales at construction
            a["kv_collection"].scales = scales
        a.update(kw)
    return mutate



CASES = [
    # --- dtypes (TypeError)
    ("q_float32", _set(q=fake([T, H, 576], np.float32)), TypeError, "q"),
    ("q_fp16_for_bf16_cache", _set(q=fake([T, H, 576], np.float16)), TypeError, "q"),
    ("q_uint8_for_bf16_cache", _set(q=fake([T, H, 576], np.uint8)), TypeError, "q"),
    ("output_fp16", _set(output=fake([T, H, 512], np.float16)), TypeError, "output"),
    ("output_float32", _set(output=fake([T, H, 512], np.float32)), TypeError, "output"),
    ("lse_fp16", _set(lse=fake([T, H], np.float16)), TypeError, "lse"),
    ("lse_bf16", _set(lse=fake([T, H], BF16)), TypeError, "lse"),
    ("sink_bf16", _set(attn_sink_ptr=fake([H], BF16)), TypeError, "attn_sink_ptr"),
    ("sink_float64", _set(attn_sink_ptr=fake([H], np.float64)), TypeError, "attn_sink_ptr"),
    ("offsets_int64", _set(input_row_offsets=fake([B + 1], np.int64)), TypeError,
     "input_row_offsets"),
    ("offsets_float32", _set(input_row_offsets=fake([B + 1], np.float32)), TypeError,
     "input_row_offsets"),
    ("lookup_int64", _kv(lookup=fake([B, PAGES], np.int64)), TypeError, "lookup_table"),
    ("lookup_float32", _kv(lookup=fake([B, PAGES], np.float32)), TypeError, "lookup_table"),
    ("cache_lengths_int64", _kv(lengths=fake([B], np.int64)), TypeError, "cache_lengths"),
    ("cache_lengths_float32", _kv(lengths=fake([B], np.float32)), TypeError, "cache_lengths"),
    ("fp16_cache_bf16_q", lambda a: a.update(
        kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 576], np.float16)),
        output=fake([T, H, 512], np.float16)), TypeError, "q"),
    ("fp16_cache_bf16_output", lambda a: a.update(
        kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 576], np.float16)),
        q=fake([T, H, 576], np.float16)), TypeError, "output"),
    ("scalar_args_int32", _set(scalar_args_buf=fake([3], np.int32)), TypeError,
     "scalar_args_buf"),
    # --- host (NumPy) arrays instead of device arrays (TypeError)
    ("q_numpy", _set(q=np.zeros([T, H, 576], BF16)), TypeError, "q"),
    ("output_numpy", _set(output=np.zeros([T, H, 512], BF16)), TypeError, "output"),
    ("offsets_numpy", _set(input_row_offsets=np.zeros([B + 1], np.uint32)), TypeError,
     "input_row_offsets"),
    ("lse_numpy", _set(lse=np.zeros([T, H], np.float32)), TypeError, "lse"),
    ("sink_numpy", _set(attn_sink_ptr=np.zeros([H], np.float32)), TypeError, "attn_sink_ptr"),
    ("blocks_numpy", _kv(blocks=np.zeros([NUM_BLOCKS, 1, PAGE, 576], BF16)), TypeError,
     "kv_collection.blocks"),
    ("lookup_numpy", _kv(lookup=np.zeros([B, PAGES], np.int32)), TypeError,
     "kv_collection.lookup_table"),
    ("cache_lengths_numpy", _kv(lengths=np.zeros([B], np.int32)), TypeError,
     "kv_collection.cache_lengths"),
    ("scalar_args_numpy", _set(scalar_args_buf=np.zeros([3], np.int64)), TypeError,
     "scalar_args_buf"),
    ("scalar_args_none", _set(scalar_args_buf=None), TypeError, "scalar_args_buf"),
    ("q_none", _set(q=None), TypeError, "q"),
    ("output_none", _set(output=None), TypeError, "output"),
    ("q_list", _set(q=[[[0.0] * 576] * H] * T), TypeError, "q"),
    # --- shapes (ValueError)
    ("q_last_dim_512", _set(q=fake([T, H, 512], BF16)), ValueError, "q"),
    ("q_last_dim_640", _set(q=fake([T, H, 640], BF16)), ValueError, "q"),
    ("q_2d", _set(q=fake([T, H * 576], BF16)), ValueError, "q"),
    ("q_576_on_512_cache", _kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 512], BF16)), ValueError, "q"),
    ("heads_0", _set(q=fake([T, 0, 576], BF16), output=fake([T, 0, 512], BF16)), ValueError, "q"),
    ("heads_129", _set(q=fake([T, 129, 576], BF16), output=fake([T, 129, 512], BF16)),
     ValueError, "q"),
    ("output_width_576", _set(output=fake([T, H, 576], BF16)), ValueError, "output"),
    ("output_more_tokens", _set(output=fake([T + 1, H, 512], BF16)), ValueError, "output"),
    ("output_fewer_heads", _set(output=fake([T, H - 1, 512], BF16)), ValueError, "output"),
    ("output_2d", _set(output=fake([T * H, 512], BF16)), ValueError, "output"),
    ("lse_more_heads", _set(lse=fake([T, H + 1], np.float32)), ValueError, "lse"),
    ("lse_transposed", _set(lse=fake([H, T], np.float32)), ValueError, "lse"),
    ("lse_3d", _set(lse=fake([T, H, 1], np.float32)), ValueError, "lse"),
    ("sink_more_heads", _set(attn_sink_ptr=fake([H + 1], np.float32)), ValueError,
     "attn_sink_ptr"),
    ("sink_2d", _set(attn_sink_ptr=fake([1, H], np.float32)), ValueError, "attn_sink_ptr"),
    ("offsets_longer_than_lookup_rows", _set(input_row_offsets=fake([B + 2], np.uint32)),
     ValueError, "input_row_offsets"),
    ("offsets_empty", _set(input_row_offsets=fake([0], np.uint32)), ValueError,
     "input_row_offsets"),
    ("offsets_2d", _set(input_row_offsets=fake([1, B + 1], np.uint32)), ValueError,
     "input_row_offsets"),
    ("scalar_args_4", _set(scalar_args_buf=fake([4], np.int64)), ValueError, "scalar_args_buf"),
    ("output_not_contiguous", _set(output=fake([T, H, 512], BF16, contiguous=False)),
     ValueError, "output"),
    ("q_not_contiguous", _set(q=fake([T, H, 576], BF16, contiguous=False)), ValueError, "q"),
    ("lse_not_contiguous", _set(lse=fake([T, H], np.float32, contiguous=False)), ValueError,
     "lse"),
    ("blocks_not_contiguous", _kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 576], BF16,
                                              contiguous=False)), ValueError, "blocks"),
    # --- masks
    ("mask_bogus", _set(mask_str="bogus"), ValueError, "mask_str"),
    ("mask_uppercase", _set(mask_str="CAUSAL"), ValueError, "mask_str"),
    ("mask_none", _set(mask_str=None), TypeError, "mask_str"),
    ("window_missing", _set(mask_str="sliding_window_causal"), ValueError, "local_window_size"),
    ("window_0", _set(mask_str="sliding_window_causal", local_window_size=0), ValueError,
     "local_window_size"),
    ("window_none", _set(mask_str="sliding_window_causal", local_window_size=None), TypeError,
     "local_window_size"),
    ("window_float", _set(mask_str="sliding_window_causal", local_window_size=4.0), TypeError,
     "local_window_size"),
    ("window_with_causal", _set(mask_str="causal", local_window_size=8), ValueError,
     "local_window_size"),
    ("window_with_null", _set(mask_str="null", local_window_size=1), ValueError,
     "local_window_size"),
    # --- layer_idx, scale, num_partitions_in
    ("layer_idx_1_of_1", _set(layer_idx=1), ValueError, "layer_idx"),
    ("layer_idx_negative", _set(layer_idx=-1), ValueError, "layer_idx"),
    ("layer_idx_float", _set(layer_idx=0.0), TypeError, "layer_idx"),
    ("layer_idx_str", _set(layer_idx="0"), TypeError, "layer_idx"),
    ("layer_idx_bool", _set(layer_idx=False), TypeError, "layer_idx"),
    ("scale_nan", _set(scale=float("nan")), ValueError, "scale"),
    ("scale_inf", _set(scale=float("inf")), ValueError, "scale"),
    ("scale_str", _set(scale="0.04"), TypeError, "scale"),
    ("scale_none", _set(scale=None), TypeError, "scale"),
    ("num_partitions_0", _set(num_partitions_in=0), ValueError, "num_partitions_in"),
    ("num_partitions_negative", _set(num_partitions_in=-2), ValueError, "num_partitions_in"),
    ("num_partitions_65536", _set(num_partitions_in=65536), ValueError, "num_partitions_in"),
    pytest.param("num_partitions_float", _set(num_partitions_in=2.0), TypeError,
                 "num_partitions_in"),
    # --- layout / mode combinations
    ("rope_aware_flag_on_bf16", _set(per_token_scale_rope_aware=True), ValueError,
     "per_token_scale_rope_aware"),
    ("q_scale_ptr_on_bf16", _set(q_scale_ptr=fake([T], np.float32)), ValueError, "q_scale_ptr"),
    ("rope_aware_without_scales", _rope_aware(scales=None), ValueError, "kv_collection.scales"),
    # PagedKVCollection checks the scales' shape and dtype (and takes NumPy for
    # the reference); the dispatcher adds only that they are on the GPU
    ("rope_aware_scales_on_host", _rope_aware(scales=np.ones([NUM_BLOCKS, 1, PAGE], np.float32)),
     TypeError, "kv_collection.scales"),
    ("rope_aware_q_576", _rope_aware(q=fake([T, H, 576], np.uint8)), ValueError, "q"),
    ("rope_aware_q_scale_shape", _rope_aware(q_scale_ptr=fake([T + 1], np.float32)), ValueError,
     "q_scale_ptr"),
    ("q_scale_ptr_on_ds_mla", lambda a: a.update(
        kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 656], np.uint8)),
        q_scale_ptr=fake([T], np.float32)), ValueError, "q_scale_ptr"),
    ("fp8_q_fp16", lambda a: a.update(
        kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 576], np.uint8)),
        q=fake([T, H, 576], np.float16)), TypeError, "q"),
    # --- sparse arguments in dense mode (ValueError)
    ("d_indices_dense", _set(d_indices=fake([T, 8], np.int32)), ValueError, "d_indices"),
    ("topk_lengths_dense", _set(topk_lengths=fake([B], np.int32)), ValueError, "topk_lengths"),
    ("extra_k_dense", lambda a: a.update(extra_k=make_kv()), ValueError, "extra_k"),
    ("extra_d_indices_dense", _set(extra_d_indices=fake([T, 8], np.int32)), ValueError,
     "extra_d_indices"),
    ("extra_topk_lengths_dense", _set(extra_topk_lengths=fake([B], np.int32)), ValueError,
     "extra_topk_lengths"),
    ("extra_scales_dense", _set(extra_scales_ptr=fake([8], np.float32)), ValueError,
     "extra_scales_ptr"),
    ("logical_indices_dense", _set(logical_indices=fake([T, 8], np.int32)), ValueError,
     "logical_indices"),
    ("fold_dense", _set(fold_shared_index=True), ValueError, "fold_shared_index"),
    ("indices_stride_dense", _set(indices_stride=5), ValueError, "indices_stride"),
    ("extra_indices_stride_dense", _set(extra_indices_stride=5), ValueError,
     "extra_indices_stride"),
    # --- sparse mode (docs/spec.md §5)
    ("sparse_sliding_window", _set(sparse_mla=True, mask_str="sliding_window_causal",
                                   local_window_size=4, d_indices=fake([T, 8], np.int32),
                                   indices_stride=8), ValueError, "mask_str"),
    ("sparse_without_indices", _set(sparse_mla=True), ValueError, "d_indices"),
    ("sparse_indices_int64", _set(sparse_mla=True, d_indices=fake([T, 8], np.int64)), TypeError,
     "d_indices"),
    ("sparse_indices_numpy", _set(sparse_mla=True, d_indices=np.zeros([T, 8], np.int32)),
     TypeError, "d_indices"),
    ("sparse_indices_rows", _set(sparse_mla=True, d_indices=fake([T + 1, 8], np.int32)),
     ValueError, "d_indices"),
    ("sparse_indices_1d", _set(sparse_mla=True, d_indices=fake([T * 8], np.int32)), ValueError,
     "d_indices"),
    ("sparse_stride_mismatch", _sparse(indices_stride=5), ValueError, "indices_stride"),
    ("sparse_stride_negative", _sparse(indices_stride=-8), ValueError, "indices_stride"),
    ("sparse_stride_float", _sparse(indices_stride=8.0), TypeError, "indices_stride"),
    ("sparse_topk_float", _sparse(topk_lengths=fake([B], np.float32)), TypeError,
     "topk_lengths"),
    ("sparse_topk_short", _sparse(topk_lengths=fake([B - 1], np.int32)), ValueError,
     "topk_lengths"),
    ("sparse_logical_shape", _sparse(logical_indices=fake([T, 4], np.int32)), ValueError,
     "logical_indices"),
    ("sparse_logical_int64", _sparse(logical_indices=fake([T, 8], np.int64)), TypeError,
     "logical_indices"),
    ("sparse_extra_indices_without_extra_k", _sparse(extra_d_indices=fake([T, 4], np.int32)),
     ValueError, "extra_d_indices"),
    ("sparse_extra_stride_without_extra_k", _sparse(extra_indices_stride=4), ValueError,
     "extra_indices_stride"),
    ("sparse_extra_k_not_collection", _sparse(extra_k=object(), extra_d_indices=EXTRA_IDX),
     TypeError, "extra_k"),
    ("sparse_extra_k_other_layout", _sparse(
        extra_k=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 576], np.float16)),
        extra_d_indices=EXTRA_IDX), ValueError, "extra_k"),
    ("sparse_extra_k_other_d_qk", _sparse(
        extra_k=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 512], BF16)),
        extra_d_indices=EXTRA_IDX), ValueError, "extra_k"),
    ("sparse_extra_k_too_few_layers", _sparse(
        layer_idx=1, kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 2, PAGE, 576], BF16)),
        extra_k=make_kv(), extra_d_indices=EXTRA_IDX), ValueError, "extra_k"),
    ("sparse_extra_k_host_blocks", _sparse(
        extra_k=make_kv(blocks=np.zeros([NUM_BLOCKS, 1, PAGE, 576], BF16)),
        extra_d_indices=EXTRA_IDX), TypeError, "extra_k.blocks"),
    ("sparse_extra_k_without_indices", _sparse(extra_k=make_kv()), ValueError,
     "extra_d_indices"),
    ("sparse_extra_indices_rows", _sparse(extra_k=make_kv(),
                                          extra_d_indices=fake([T - 1, 4], np.int32)),
     ValueError, "extra_d_indices"),
    ("sparse_extra_stride_mismatch", _sparse(extra_k=make_kv(), extra_d_indices=EXTRA_IDX,
                                             extra_indices_stride=8),
     ValueError, "extra_indices_stride"),
    ("sparse_extra_topk_short", _sparse(extra_k=make_kv(), extra_d_indices=EXTRA_IDX,
                                        extra_topk_lengths=fake([1], np.int32)),
     ValueError, "extra_topk_lengths"),
    ("rope_aware_extra_without_scales", lambda a: a.update(
        kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                              scales=fake([NUM_BLOCKS, 1, PAGE], np.float32)),
        q=fake([T, H, 640], np.uint8), per_token_scale_rope_aware=True, sparse_mla=True,
        d_indices=fake([T, 8], np.int32), extra_k=make_kv(page_size=2, blocks=fake([5, 1, 2, 640], np.uint8)),
        extra_d_indices=fake([T, 4], np.int32)), ValueError, "extra_scales_ptr"),
    ("rope_aware_extra_scales_twice", lambda a: a.update(
        kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                              scales=fake([NUM_BLOCKS, 1, PAGE], np.float32)),
        q=fake([T, H, 640], np.uint8), per_token_scale_rope_aware=True, sparse_mla=True,
        d_indices=fake([T, 8], np.int32),
        extra_k=make_kv(page_size=2, blocks=fake([5, 1, 2, 640], np.uint8),
                        scales=fake([5, 1, 2], np.float32)),
        extra_d_indices=fake([T, 4], np.int32), extra_scales_ptr=fake([5, 1, 2], np.float32)),
     ValueError, "extra_scales_ptr"),
    *[(f"rope_aware_extra_scales_{label}", (lambda sc: lambda a: a.update(
        kv_collection=make_kv(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                              scales=fake([NUM_BLOCKS, 1, PAGE], np.float32)),
        q=fake([T, H, 640], np.uint8), per_token_scale_rope_aware=True, sparse_mla=True,
        d_indices=fake([T, 8], np.int32), extra_k=make_kv(page_size=2, blocks=fake([5, 1, 2, 640], np.uint8)),
        extra_d_indices=fake([T, 4], np.int32), extra_scales_ptr=sc))(scales), exc, "extra_scales_ptr")
      for label, scales, exc in (("float16", fake([5, 1, 2], np.float16), TypeError),
                                 ("wrong_shape", fake([5, 1, 3], np.float32), ValueError),
                                 ("on_host", np.ones([5, 1, 2], np.float32), TypeError))],
    ("sparse_extra_scales_on_bf16", _sparse(extra_k=make_kv(), extra_d_indices=EXTRA_IDX,
                                            extra_scales_ptr=fake([8], np.float32)),
     ValueError, "extra_scales_ptr"),
    # --- scalar_args_buf / kv_collection
    ("scalar_args_batch_too_big", _set(scalar_args_buf=scalar_args(batch_size=B + 1)),
     ValueError, "scalar_args_buf"),
    pytest.param("scalar_args_partitions_0", _set(scalar_args_buf=scalar_args(num_partitions=0)),
                 ValueError, "num_partitions"),
    pytest.param("scalar_args_negative_batch", _set(scalar_args_buf=scalar_args(batch_size=-1)),
                 ValueError, "batch_size"),
    ("kv_collection_none", _set(kv_collection=None), TypeError, "kv_collection"),
    ("kv_collection_dict", _set(kv_collection={"blocks": None}), TypeError, "kv_collection"),
]


def _params(cases):
    """Cases as pytest params with their first field as the id."""
    for c in cases:
        if hasattr(c, "marks"):   # already a pytest.param (a namedtuple)
            yield pytest.param(*c.values, id=c.values[0], marks=c.marks)
        else:
            yield pytest.param(*c, id=c[0])


# Messages without a "got ...": a combination, or a feature not built yet.
NO_GOT = {"sparse_sliding_window", "scalar_args_batch_too_big"}


def _names_argument(msg: str, name: str) -> bool:
    """The text before the first ':' is the argument (possibly 'a/b',
    'kv_collection.blocks' or 'sparse_mla=True')."""
    head = msg.split(":", 1)[0]
    return head == name or name in re.split(r"[/.=]", head)


@pytest.mark.parametrize("case_id,mutate,exc,name", list(_params(CASES)))
def test_bad_argument_raises_before_launch(past_validation, case_id, mutate, exc, name):
    args = baseline()
    with pytest.raises(exc) as info:   # PastValidation or another type propagates
        mutate(args)
        call(args)
    assert type(info.value) is exc, f"{case_id}: got {type(info.value).__name__}: {info.value}"
    msg = str(info.value)
    assert _names_argument(msg, name), f"{case_id}: message does not name {name!r}: {msg}"
    if exc is not NotImplementedError and case_id not in NO_GOT:
        assert "got" in msg, f"{case_id}: message does not say what was given: {msg}"


def test_mla_decode_checks_before_allocating():
    with pytest.raises(TypeError, match="kv_collection"):
        mla_decode(fake([T, H, 576], BF16), object(), fake([B + 1], np.uint32))
    with pytest.raises(ValueError, match="^q: "):
        mla_decode(fake([T * H, 576], BF16), make_kv(), fake([B + 1], np.uint32))


def test_mla_decode_q_none_is_type_error():
    with pytest.raises(TypeError, match="q"):
        mla_decode(None, make_kv(), fake([B + 1], np.uint32))


# ------------------------------------------------- PagedKVCollection construction

KV_CASES = [
    ("blocks_5d", dict(blocks=fake([NUM_BLOCKS, 1, 1, PAGE, 576], BF16)), ValueError, "blocks"),
    ("blocks_2d", dict(blocks=fake([NUM_BLOCKS * PAGE, 576], BF16)), ValueError, "blocks"),
    ("blocks_6d_bad_unit_axes", dict(blocks=fake([NUM_BLOCKS, 2, 1, PAGE, 1, 576], BF16)),
     ValueError, "blocks"),
    ("page_size_mismatch", dict(page_size=32), ValueError, "page_size"),
    ("page_size_0", dict(page_size=0), ValueError, "page_size"),
    ("page_size_0_empty_pages", dict(blocks=fake([NUM_BLOCKS, 1, 0, 576], BF16), page_size=0),
     ValueError, "page_size"),
    ("page_size_negative", dict(page_size=-64), ValueError, "page_size"),
    ("page_size_float", dict(page_size=64.0), TypeError, "page_size"),
    ("page_size_bool", dict(blocks=fake([NUM_BLOCKS, 1, 1, 576], BF16), page_size=True),
     TypeError, "page_size"),
    ("lookup_float", dict(lookup=fake([B, PAGES], np.float32)), TypeError, "lookup_table"),
    ("lookup_int16", dict(lookup=fake([B, PAGES], np.int16)), TypeError, "lookup_table"),
    ("lookup_1d", dict(lookup=fake([B * PAGES], np.int32)), ValueError, "lookup_table"),
    ("cache_lengths_float", dict(lengths=fake([B], np.float64)), TypeError, "cache_lengths"),
    ("cache_lengths_wrong_length", dict(lengths=fake([B + 1], np.int32)), ValueError,
     "cache_lengths"),
    ("cache_lengths_2d", dict(lengths=fake([B, 1], np.int32)), ValueError, "cache_lengths"),
    ("layout_unknown", dict(layout="int4"), ValueError, "layout"),
    ("layout_fp16_for_bf16_blocks", dict(layout="fp16"), TypeError, "blocks"),
    ("layout_fp8_for_bf16_blocks", dict(layout="fp8"), TypeError, "blocks"),
    ("layout_bf16_for_uint8_blocks", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 576], np.uint8),
                                          layout="bf16"), TypeError, "blocks"),
    ("layout_rope_aware_576_rows", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 576], np.uint8),
                                        layout="fp8_rope_aware"), ValueError, "blocks"),
    ("layout_ds_mla_640_rows", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                                    layout="fp8_ds_mla"), ValueError, "blocks"),
    ("layout_bf16_640_rows", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], BF16),
                                  layout="bf16"), ValueError, "blocks"),
    ("no_layout_for_uint8_600", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 600], np.uint8)),
     ValueError, "blocks"),
    ("no_layout_for_bf16_640", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], BF16)),
     ValueError, "blocks"),
    pytest.param("blocks_float32", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 576], np.float32)),
                 TypeError, "blocks"),
    ("rope_aware_scales_wrong_shape", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                                           scales=fake([NUM_BLOCKS, 1, PAGE // 2], np.float32)),
     ValueError, "scales"),
    ("rope_aware_scales_2d_multi_layer", dict(blocks=fake([NUM_BLOCKS, 2, PAGE, 640], np.uint8),
                                              scales=fake([NUM_BLOCKS, PAGE], np.float32)),
     ValueError, "scales"),
    ("rope_aware_scales_fp16", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                                    scales=fake([NUM_BLOCKS, 1, PAGE], np.float16)),
     TypeError, "scales"),
    ("rope_aware_scales_bf16_2d", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 640], np.uint8),
                                       scales=fake([NUM_BLOCKS, PAGE], BF16)),
     TypeError, "scales"),
    ("scales_for_bf16", dict(scales=fake([NUM_BLOCKS, 1, PAGE], np.float32)), ValueError,
     "scales"),
    ("scales_for_fp8", dict(blocks=fake([NUM_BLOCKS, 1, PAGE, 576], np.uint8),
                            scales=fake([NUM_BLOCKS, 1, PAGE], np.float32)), ValueError, "scales"),
    ("max_cache_length_negative", dict(max_cache_length=-1), ValueError, "max_cache_length"),
    pytest.param("max_cache_length_float", dict(max_cache_length=100.0), TypeError,
                 "max_cache_length"),
    pytest.param("lookup_none", dict(lookup=None, lookup_none=True), TypeError, "lookup_table"),
    pytest.param("blocks_none", dict(blocks=None, blocks_none=True), TypeError, "blocks"),
]


def _build_kv(kw):
    kw = dict(kw)
    blocks = kw.pop("blocks", fake([NUM_BLOCKS, 1, PAGE, 576], BF16))
    lookup = kw.pop("lookup", fake([B, PAGES], np.int32))
    lengths = kw.pop("lengths", fake([B], np.int32))
    if kw.pop("lookup_none", False):
        lookup = None
    if kw.pop("blocks_none", False):
        blocks = None
    page_size = kw.pop("page_size", PAGE)
    kw.setdefault("max_cache_length", 100)
    return PagedKVCollection(blocks, lookup, lengths, page_size, **kw)


@pytest.mark.parametrize("case_id,kw,exc,name", list(_params(KV_CASES)))
def test_paged_kv_collection_rejects(case_id, kw, exc, name):
    with pytest.raises(exc) as info:
        _build_kv(kw)
    assert type(info.value) is exc, f"{case_id}: got {type(info.value).__name__}: {info.value}"
    assert str(info.value).startswith(f"{name}:"), str(info.value)


@pytest.mark.parametrize("blocks,layout,num_layers,d_qk", [
    (fake([NUM_BLOCKS, PAGE, 576], BF16), Layout.BF16, 1, 576),
    (fake([NUM_BLOCKS, 3, PAGE, 512], BF16), Layout.BF16, 3, 512),
    (fake([NUM_BLOCKS, 1, 5, PAGE, 1, 576], np.float16), Layout.FP16, 5, 576),
    (fake([NUM_BLOCKS, 2, PAGE, 576], np.uint8), Layout.FP8, 2, 576),
    (fake([NUM_BLOCKS, 2, PAGE, 640], np.uint8), Layout.FP8_ROPE_AWARE, 2, 576),
    (fake([NUM_BLOCKS, 2, PAGE, 656], np.uint8), Layout.FP8_DS_MLA, 2, 576),
    # e4m3-typed bytes (torch float8_e4m3fn; FlashMLA's V3.2 cache viewed as one layer)
    (fake([NUM_BLOCKS, PAGE, 656], ml_dtypes.float8_e4m3fn), Layout.FP8_DS_MLA, 1, 576),
    (fake([NUM_BLOCKS, PAGE, 640], ml_dtypes.float8_e4m3fn), Layout.FP8_ROPE_AWARE, 1, 576),
    (fake([NUM_BLOCKS, PAGE, 576], ml_dtypes.float8_e4m3fn), Layout.FP8, 1, 576),
])
def test_paged_kv_collection_accepts(blocks, layout, num_layers, d_qk):
    kv = _build_kv(dict(blocks=blocks))
    assert kv.layout is layout
    assert (kv.num_blocks, kv.num_layers, kv.page_size, kv.d_qk) == (NUM_BLOCKS, num_layers,
                                                                       PAGE, d_qk)
    assert len(kv.blocks.shape) == 4 and kv.batch_size == B and kv.max_cache_length == 100
    # the explicit layout name agrees with the inferred one
    assert _build_kv(dict(blocks=blocks, layout=layout.value)).layout is layout


def test_paged_kv_collection_one_layer_2d_scales():
    kv = _build_kv(dict(blocks=fake([NUM_BLOCKS, PAGE, 640], np.uint8),
                        scales=fake([NUM_BLOCKS, PAGE], np.float32)))
    assert kv.layout is Layout.FP8_ROPE_AWARE and tuple(kv.scales.shape) == (NUM_BLOCKS, 1, PAGE)


# ------------------------------------------------- scalar args (host side only)

@pytest.mark.parametrize("bad", [0, -1, 65536, 2**40])
def test_check_num_partitions_rejects_values(bad):
    with pytest.raises(ValueError, match=r"^num_partitions: expected an int in \[1, 65535\]"):
        check_num_partitions(bad)


@pytest.mark.parametrize("bad", [1.0, 2.5, True, False, "2", None, np.float32(2)])
def test_check_num_partitions_rejects_types(bad):
    with pytest.raises(TypeError, match=r"^num_partitions: expected an int, got"):
        check_num_partitions(bad)


@pytest.mark.parametrize("good", [1, 2, 64, 65535, np.int32(7), np.int64(65535)])
def test_check_num_partitions_accepts(good):
    assert check_num_partitions(good) is None


@pytest.mark.parametrize("args,kw,name", [
    ((-1, 1, 100, 16), {}, "batch_size"),
    ((2, -1, 100, 16), {}, "q_max_seq_len"),
    ((2, 1, -100, 16), {}, "max_cache_length"),
    ((2, 1, 100, -16), {}, "num_heads"),
    ((2.0, 1, 100, 16), {}, "batch_size"),
    ((2, 1, 100, 16), dict(num_partitions=0), "num_partitions"),
    ((2, 1, 100, 16), dict(num_partitions=0), "num_partitions"),
    ((-1, 1, 100, 16), dict(num_partitions=1), "batch_size"),
    ((2, -3, 100, 16), dict(num_partitions=4), "q_max_seq_len"),
])
def test_pack_scalar_args_rejects_before_upload(args, kw, name):
    with pytest.raises(ValueError) as info:
        pack_scalar_args(*args, **kw)
    assert name in str(info.value).split(":")[0], str(info.value)
