"""The compile cache under concurrency and faults (CPU, NVRTC without a GPU).

get_kernel compiles through CuPy's RawKernel, whose disk cache
(``CUPY_CACHE_DIR``) stores each cubin through
``cupy.cuda._compiler_cache.DiskKernelCacheBackend``: a SHA-1 of the cubin in
front of it, written to a temporary file and renamed into place.  CuPy's
compile path needs a device to name its cache files, so here the cubins come
from the offline path (compiler.compile_cubin, as tests/test_compile.py
compiles) and go through CuPy's own cache backend, the layer that decides what
concurrent writers and damaged files do.  The in-process memo of get_kernel is
driven by threads with CuPy's RawKernel replaced by a recording stand-in.
tests/test_gpu_hardening.py runs the whole get_kernel path in processes on a GPU.
"""
from __future__ import annotations

import concurrent.futures as cf
import hashlib
import multiprocessing
import os
import threading
import time

import pytest

from mla_cupy import compiler

VARIANTS = ("mla_combine_bf16", "mla_check_inputs", "mla_decode_bf16_causal_dense_fold0_m16")
ARCH = "sm_80"


def _backend(cache_dir):
    from cupy.cuda._compiler_cache import DiskKernelCacheBackend
    return DiskKernelCacheBackend(cache_dir)


def _cache_name(name):
    return hashlib.sha1(f"{name} {ARCH}".encode()).hexdigest() + ".cubin"


def _compile_through_cache(cache_dir, barrier=None):
    """What one process does: for each variant, load from the cache or compile
    and save; returns the SHA-1 of every cubin it ends up with."""
    if barrier is not None:
        barrier.wait()          # all processes start compiling at once
    cache = _backend(cache_dir)
    got = {}
    for name in VARIANTS:
        cubin = cache.load(_cache_name(name))
        if cubin is None:
            cubin = compiler.compile_cubin(name, ARCH)
            cache.save(_cache_name(name), cubin, "")
        again = cache.load(_cache_name(name))
        assert again == cubin
        got[name] = hashlib.sha1(cubin).hexdigest()
    return got


def test_processes_compiling_into_an_empty_cache_all_get_the_same_binaries(tmp_path):
    ctx = multiprocessing.get_context("spawn")
    n = 4
    with ctx.Manager() as manager:
        barrier = manager.Barrier(n)
        with cf.ProcessPoolExecutor(n, mp_context=ctx) as pool:
            results = list(pool.map(_compile_through_cache, [str(tmp_path)] * n, [barrier] * n))
    assert all(r == results[0] for r in results)
    assert sorted(os.listdir(tmp_path)) == sorted(_cache_name(v) for v in VARIANTS)   # no temp files left
    expected = {v: hashlib.sha1(compiler.compile_cubin(v, ARCH)).hexdigest() for v in VARIANTS}
    assert results[0] == expected


@pytest.mark.parametrize("damage", ["truncate", "empty", "flip"])
def test_a_damaged_cache_file_is_recompiled_not_a_crash(tmp_path, damage):
    first = _compile_through_cache(str(tmp_path))
    path = tmp_path / _cache_name(VARIANTS[0])
    data = path.read_bytes()
    if damage == "truncate":
        path.write_bytes(data[:len(data) // 2])
    elif damage == "empty":
        path.write_bytes(b"")
    else:
        path.write_bytes(data[:-1] + bytes([data[-1] ^ 1]))
    assert _backend(str(tmp_path)).load(_cache_name(VARIANTS[0])) is None   # CuPy rejects it
    assert _compile_through_cache(str(tmp_path)) == first                   # and it is rebuilt
    assert path.read_bytes() == data


class _FakeRawKernel:
    """Records constructions; compile() takes a while, as NVRTC does."""

    made: list = []
    lock = threading.Lock()
    fail_next = set()

    def __init__(self, source, name, options, backend):
        with self.lock:
            self.made.append(name)
        self.name = name

    def compile(self):
        time.sleep(0.01)
        if self.name in self.fail_next:
            self.fail_next.discard(self.name)
            import cupy
            raise cupy.cuda.compiler.CompileException("injected", "", self.name, ())


class _NoDevice:
    def __init__(self, *a):
        pass

    def __enter__(self):
        return self

    def __exit__(self, *a):
        return False


@pytest.fixture
def fake_cupy(monkeypatch):
    import cupy
    _FakeRawKernel.made = []
    monkeypatch.setattr(cupy, "RawKernel", _FakeRawKernel)
    monkeypatch.setattr(cupy.cuda, "Device", _NoDevice)
    monkeypatch.setattr(compiler, "device_arch", lambda device_id: "sm_90a")
    monkeypatch.setattr(compiler, "_memo", {})
    monkeypatch.setenv("MLA_CUPY_DUMP_DIR", "/tmp/mla_cupy_test_dumps")
    return _FakeRawKernel


def test_threads_sharing_the_memo_compile_each_variant_once(fake_cupy):
    keys = list(VARIANTS) * 16
    with cf.ThreadPoolExecutor(8) as pool:
        kernels = list(pool.map(lambda n: compiler.get_kernel(n, device_id=0), keys))
    assert sorted(fake_cupy.made) == sorted(VARIANTS)            # one compile per variant
    for name in VARIANTS:
        same = {id(k) for n, k in zip(keys, kernels) if n == name}
        assert len(same) == 1
    # another device is another memo entry
    compiler.get_kernel(VARIANTS[0], device_id=1)
    assert fake_cupy.made.count(VARIANTS[0]) == 2


def test_a_failed_compile_is_not_memoised(fake_cupy):
    fake_cupy.fail_next.add(VARIANTS[1])
    with cf.ThreadPoolExecutor(4) as pool:
        futures = [pool.submit(compiler.get_kernel, VARIANTS[1], 0) for _ in range(4)]
        outcomes = [f.exception() for f in futures]
    errors = [e for e in outcomes if e is not None]
    assert len(errors) == 1 and isinstance(errors[0], compiler.KernelCompileError)
    assert fake_cupy.made.count(VARIANTS[1]) == 2                # the next caller compiled again
    assert compiler.get_kernel(VARIANTS[1], 0) is compiler.get_kernel(VARIANTS[1], 0)
