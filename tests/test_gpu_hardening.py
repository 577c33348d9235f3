"""Issue 11 on the GPU (marker ``gpu``): masked means never read, batch
invariance, the checked mode and concurrent streams.  No ``compiled_kernels``
fixture: each test compiles only the variants it runs (CuPy's disk cache keeps
them), so this file alone takes a few minutes on a fresh machine."""
from __future__ import annotations

import os
import re

import numpy as np
import pytest

from mla_cupy import checked
from mla_cupy.testing import (LAYOUTS, check_case, checked_mode_facts, checked_mode_inputs, compare,
                              make_case, make_sparse_case, nan_filled, only_minus_one, poison_unread,
                              reference, run_gpu, sub_case, tolerance_for)

pytestmark = pytest.mark.gpu


def _is_sm90():
    import cupy
    return int(cupy.cuda.Device().compute_capability) == 90


# ------------------------------------------------------------ masked means never read

def _check_poisoned(case, p):
    """The poisoned case against the reference (which tests/test_masked_never_read.py
    holds bit-identical to the clean case's), both lse paths, finite outputs."""
    cmp, out, _, _, _ = check_case(poison_unread(case), num_partitions=p)
    assert cmp.ok, f"{case.describe()} P={p}: {cmp.message}"
    assert np.isfinite(out).all(), f"{case.describe()} P={p}: non-finite output from poisoned rows"


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mask", ["null", "causal", "sliding_window_causal"])
def test_dense_rows_never_read_may_hold_nan_and_inf(rng, layout, mask):
    case = make_case(rng, seq_lens=[1, 3, 0, 2], cache_lens=[70, 5, 9, 300], num_heads=16, page_size=16,
                     layout=layout, mask=mask, window=40, num_layers=2, layer_idx=1)
    for p in (1, 3):
        _check_poisoned(case, p)


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mask", ["null", "causal"])
@pytest.mark.parametrize("fold,extra", [(False, 0), (False, 7), (True, 7)])
def test_sparse_rows_never_read_may_hold_nan_and_inf(rng, layout, mask, fold, extra):
    # cache lengths below the stride: slots past C_b + i are hidden by the causal rule
    case = make_sparse_case(rng, seq_lens=[2, 1, 3], cache_lens=[30, 7, 100], indices_stride=48,
                            num_heads=16, page_size=8, topk="random", logical=mask == "causal" and fold,
                            extra_stride=extra, extra_page_size=3, extra_topk="random", layout=layout,
                            mask=mask, fold=fold, valid_fraction=0.6, num_layers=2, layer_idx=1)
    for p in (1, 3):
        _check_poisoned(case, p)


# ------------------------------------------------------------ batch invariance

def _bits(a):
    return np.ascontiguousarray(a).view(np.uint32)


def _alone_and_in_batch(rng, build, target_kw, backend):
    """Sequence 'target' alone and at a random place among 64 random others,
    batch_invariant=True: out and lse rows must be the same bits."""
    n = 65
    at = int(rng.integers(0, n))
    seq_lens = rng.integers(1, 5, size=n)
    cache_lens = rng.integers(0, 3000, size=n)
    seq_lens[at], cache_lens[at] = target_kw
    case = build(seq_lens.tolist(), cache_lens.tolist())
    alone = sub_case(case, at)
    out, lse = run_gpu(case, batch_invariant=True, backend=backend)
    out1, lse1 = run_gpu(alone, batch_invariant=True, backend=backend)
    lo, hi = int(case.input_row_offsets[at]), int(case.input_row_offsets[at + 1])
    assert np.array_equal(_bits(out[lo:hi]), _bits(out1)), f"{alone.describe()}: out differs"
    assert np.array_equal(_bits(lse[lo:hi]), _bits(lse1)), f"{alone.describe()}: lse differs"
    # and it is the right answer
    cmp = compare(out1, lse1, *reference(alone), tol=tolerance_for(alone))
    assert cmp.ok, f"{alone.describe()}: {cmp.message}"


@pytest.mark.parametrize("backend", ["portable", "hopper"])
@pytest.mark.parametrize("layout,mask", [("bf16", "causal"), ("fp16", "sliding_window_causal"),
                                         ("bf16", "null")])
def test_dense_batch_invariant(rng, backend, layout, mask):
    if backend == "hopper" and not _is_sm90():
        pytest.skip("the hopper backend needs sm_90")

    def build(s, c):
        return make_case(rng, seq_lens=s, cache_lens=c, num_heads=16, page_size=64, layout=layout,
                         mask=mask, window=700, sink="random")
    _alone_and_in_batch(rng, build, (2, 2500), backend)


@pytest.mark.parametrize("layout,fold", [("bf16", False), ("bf16", True), ("fp8_ds_mla", True)])
def test_sparse_and_fp8_batch_invariant(rng, layout, fold):
    def build(s, c):
        return make_sparse_case(rng, seq_lens=s, cache_lens=c, indices_stride=256, num_heads=16,
                                page_size=64, fold=fold, topk="random", extra_stride=9, layout=layout)
    _alone_and_in_batch(rng, build, (2, 2000), "portable")


def test_dense_fp8_batch_invariant(rng):
    def build(s, c):
        return make_case(rng, seq_lens=s, cache_lens=c, num_heads=128, page_size=32, layout="fp8_rope_aware")
    _alone_and_in_batch(rng, build, (1, 2900), "portable")


# ------------------------------------------------------------ checked mode

def _expect_check(case, *, q_max_seq_len=None, **kw):
    """mla_decode(validate='full') raises the message of the NumPy rules' first
    violation (or passes when there is none), and launches nothing on a failure."""
    import cupy
    from mla_cupy import mla_decode
    if q_max_seq_len is None:   # offsets may be corrupted: never let a decrease wrap around
        q_max_seq_len = max(0, int(np.diff(case.input_row_offsets.astype(np.int64)).max()))
    expected = checked.find_violation(**checked_mode_inputs(case, q_max_seq_len=q_max_seq_len))
    rows = (case.q.shape[0], case.num_heads)
    out, lse = nan_filled((*rows, 512), case.out_dtype), nan_filled(rows, np.float32)
    call = dict(layer_idx=case.layer_idx, scale=case.scale, mask=case.mask,
                window=case.window if case.mask == "sliding_window_causal" else None,
                out=out, lse=lse, q_max_seq_len=q_max_seq_len,
                num_partitions=3, **case.sparse_kwargs(cupy), **case.fp8_kwargs(cupy), **kw)
    args = (cupy.asarray(case.q), case.collection(cupy), cupy.asarray(case.input_row_offsets))
    if expected is None:
        mla_decode(*args, **call)
        assert np.isfinite(out.get().astype(np.float32)).all()
        return None
    text = checked.message(expected, checked_mode_facts(case, q_max_seq_len=q_max_seq_len))
    with pytest.raises(ValueError) as err:
        mla_decode(*args, **call)
    assert str(err.value) == text
    assert np.isnan(out.get().astype(np.float32)).all() and np.isnan(lse.get()).all(), "decode ran"
    return expected


def _dense(rng, **kw):
    return make_case(rng, **(dict(seq_lens=[1, 3, 0, 2], cache_lens=[70, 5, 9, 300], num_heads=16,
                                  page_size=16) | kw))


def _sparse(rng, **kw):
    return only_minus_one(make_sparse_case(rng, **(dict(
        seq_lens=[2, 1, 3], cache_lens=[100, 7, 40], indices_stride=24, num_heads=16, page_size=8,
        topk="random", logical=True, extra_stride=5, extra_topk="random") | kw)))


def test_checked_mode_passes_valid_inputs(rng, monkeypatch):
    for case in (_dense(rng), _dense(rng, mask="sliding_window_causal", window=20),
                 _sparse(rng), _sparse(rng, fold=True)):
        assert _expect_check(case, validate="full") is None
    monkeypatch.setenv(checked.ENV, "1")
    assert _expect_check(_sparse(rng, fold=True, layout="fp8_ds_mla")) is None


def _mutations(case):
    B = case.batch_size
    yield "offsets_order", lambda c: c.input_row_offsets.__setitem__(2, 0)
    yield "offsets_end", lambda c: c.input_row_offsets.__setitem__(B, c.input_row_offsets[B] - 1)
    yield "cache_overflow", lambda c: c.cache_lengths.__setitem__(B - 1, 2**31 - 1)
    if case.sparse is None:
        yield "cache_capacity", lambda c: c.cache_lengths.__setitem__(
            0, c.lookup_table.shape[1] * c.page_size)
        yield "lookup", lambda c: c.lookup_table.__setitem__((B - 1, 3), c.blocks.shape[0] + 5)
    else:
        sp = case.sparse
        yield "topk", lambda c: c.sparse["topk_lengths"].__setitem__(1, -3)
        yield "index", lambda c: c.sparse["d_indices"].__setitem__((0, 0), -2**31)
        yield "logical", lambda c: c.sparse["logical_indices"].__setitem__((0, 0), 10**6)
        yield "extra_topk", lambda c: c.sparse["extra_topk_lengths"].__setitem__(2, 99)
        yield "extra_index", lambda c: c.sparse["extra_d_indices"].__setitem__(
            (sp["extra_d_indices"].shape[0] - 1, 0), 2**31 - 1)


@pytest.mark.parametrize("kind", ["dense", "sparse"])
def test_checked_mode_names_each_violation(rng, kind):
    import copy
    base = _dense(rng) if kind == "dense" else _sparse(rng)
    if kind == "sparse":
        base.sparse["topk_lengths"][:] = 24
        base.sparse["extra_topk_lengths"][:] = 5
    seen = set()
    for rule, mutate in _mutations(base):
        case = copy.deepcopy(base)
        mutate(case)
        got = _expect_check(case, validate="full")
        assert got is not None and got.rule == rule, (rule, got)
        seen.add(rule)
    assert _expect_check(base, q_max_seq_len=2, validate="full").rule == "q_max_seq_len"
    assert len(seen) >= 5


def _finite_cache(case):
    """The case with its unused cache rows 0 instead of NaN.  A corruption the rules
    accept may point a visible key at an unused row (an index or page id in range),
    which breaks the caller's contract (a visible key refers to finite values,
    docs/spec.md §11, precondition 6): NaN is then a right answer, and the kernels and the reference
    place it differently (the kernels count a row whose sum is NaN as empty).
    MLA_CUPY_SEED=4710371379438756716 drew such a case (tools/results/NOTES.md,
    session 16).  With finite rows every accepted input must give finite output."""
    for blocks in (case.blocks, getattr(case, "extra_blocks", None)):
        if blocks is not None and blocks.dtype != np.uint8:
            blocks[np.isnan(blocks.astype(np.float32))] = 0
    return case


def test_checked_mode_random_corruptions_match_the_numpy_rules(rng):
    """Random entries of every checked array overwritten with random values:
    the kernel's first violation is the NumPy rules' first, message for message;
    with none, the call runs and its output is finite (the cache's unused rows
    finite: _finite_cache)."""
    for trial in range(12):
        case = _finite_cache(_sparse(rng, fold=bool(trial % 2)) if trial % 3
                             else _dense(rng, mask="sliding_window_causal", window=30))
        arrays = [case.lookup_table, case.cache_lengths] if case.sparse is None else [
            case.sparse[k] for k in ("d_indices", "logical_indices", "topk_lengths", "extra_d_indices",
                                     "extra_topk_lengths")]
        for _ in range(int(rng.integers(1, 4))):
            a = arrays[int(rng.integers(0, len(arrays)))]
            flat = a.reshape(-1)
            flat[int(rng.integers(0, flat.size))] = rng.choice([-2, -1, 0, 5, 400, 2**31 - 1])
        _expect_check(case, validate="full")


def test_checked_mode_device_batch_size(rng):
    import cupy
    from mla_cupy import generic_flare_mla_decode_kv_cache_ragged, pack_scalar_args
    case = _dense(rng)
    sa = pack_scalar_args(case.batch_size, case.q_max_seq_len, 300, case.num_heads, num_partitions=2)
    sa.buffer[0] = case.batch_size + 3
    out = nan_filled((case.q.shape[0], case.num_heads, 512), case.out_dtype)
    with pytest.raises(ValueError, match=re.escape(
            f"scalar_args_buf: element 0 (batch_size on the device): expected 0 <= batch_size <= "
            f"{case.batch_size} (the host value the grid was built with), got {case.batch_size + 3}")):
        generic_flare_mla_decode_kv_cache_ragged(
            cupy.asarray(case.q), cupy.asarray(case.input_row_offsets), case.collection(cupy), 0,
            case.scale, out, sa, validate="full")


# ------------------------------------------------------------ streams

def test_two_streams_in_parallel_give_the_serial_bytes(rng):
    import cupy
    from mla_cupy import mla_decode
    cases = [make_case(rng, seq_lens=[1] * 8, cache_lens=rng.integers(500, 4000, 8), num_heads=64),
             make_sparse_case(rng, seq_lens=[2, 3], cache_lens=[900, 2000], indices_stride=1024,
                              num_heads=32, fold=True, extra_stride=16)]
    uploaded = [(cupy.asarray(c.q), c.collection(cupy), cupy.asarray(c.input_row_offsets),
                 c.sparse_kwargs(cupy)) for c in cases]

    def launch(i, stream, out, lse):
        c = cases[i]
        q, kv, offs, sp = uploaded[i]
        mla_decode(q, kv, offs, scale=c.scale, mask=c.mask, num_partitions=4, out=out, lse=lse,
                   q_max_seq_len=c.q_max_seq_len, stream=stream, **sp)

    def buffers(c):
        rows = (c.q.shape[0], c.num_heads)
        return nan_filled((*rows, 512), c.out_dtype), nan_filled(rows, np.float32)

    serial = []
    for i, c in enumerate(cases):
        out, lse = buffers(c)
        launch(i, None, out, lse)
        serial.append((out.get(), lse.get()))
    streams = [cupy.cuda.Stream(non_blocking=True) for _ in range(2)]
    for rep in range(3):
        bufs = [buffers(c) for c in cases] + [buffers(cases[0])]
        cupy.cuda.Device().synchronize()   # the NaN fills ran on the legacy stream
        # case 0 on both streams and case 1 on stream 1, queued back to back
        launch(0, streams[0], *bufs[0])
        launch(1, streams[1], *bufs[1])
        launch(0, streams[1], *bufs[2])
        for s in streams:
            s.synchronize()
        for (out, lse), (ref_out, ref_lse) in zip(bufs, serial + serial[:1]):
            assert np.array_equal(out.get().view(np.uint16), ref_out.view(np.uint16)), f"rep {rep}"
            assert np.array_equal(lse.get().view(np.uint32), ref_lse.view(np.uint32)), f"rep {rep}"


# ------------------------------------------------------------ compile cache, real path

_CACHE_VARIANTS = ("mla_combine_fp16", "mla_decode_fp16_null_dense_fold0_m16")


def _get_kernels_in_fresh_process(cache_dir):
    os.environ["CUPY_CACHE_DIR"] = cache_dir
    from mla_cupy.compiler import get_kernel
    for name in _CACHE_VARIANTS:
        get_kernel(name)
    return sorted(os.listdir(cache_dir))


def test_processes_share_cupys_cache_and_survive_a_truncated_file(tmp_path):
    import concurrent.futures as cf
    import multiprocessing
    from cupy.cuda._compiler_cache import DiskKernelCacheBackend
    ctx = multiprocessing.get_context("spawn")
    with cf.ProcessPoolExecutor(3, mp_context=ctx) as pool:
        listings = list(pool.map(_get_kernels_in_fresh_process, [str(tmp_path)] * 3))
    cubins = [f for f in os.listdir(tmp_path) if f.endswith(".cubin")]
    assert len(cubins) == len(_CACHE_VARIANTS) and all(set(cubins) <= set(lst) for lst in listings)
    cache = DiskKernelCacheBackend(str(tmp_path))
    good = {f: cache.load(f) for f in cubins}
    assert all(v is not None for v in good.values())
    path = tmp_path / cubins[0]
    path.write_bytes(path.read_bytes()[:100])
    with cf.ProcessPoolExecutor(1, mp_context=ctx) as pool:
        pool.submit(_get_kernels_in_fresh_process, str(tmp_path)).result()
    assert cache.load(cubins[0]) == good[cubins[0]]
