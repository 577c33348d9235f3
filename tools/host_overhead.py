"""Host-side cost of one call (validation, argument packing, launch), GPU machine.

Usage:  PYTHONPATH=. python3 tools/host_overhead.py

Times 300 back-to-back calls of generic_flare_mla_decode_kv_cache_ragged with a
prebuilt ScalarArgs (the serving path) and of mla_decode, host wall clock per
call, and prints cProfile's top entries for the serving path.
"""
import cProfile
import pstats
import time

import cupy
import numpy as np

from mla_cupy import generic_flare_mla_decode_kv_cache_ragged, mla_decode, pack_scalar_args
from mla_cupy.testing import make_case

rng = np.random.default_rng(0)
case = make_case(rng, seq_lens=[1] * 8, cache_lens=[2048] * 8, num_heads=16, page_size=64)
kv = case.collection(cupy)
q, offs = cupy.asarray(case.q), cupy.asarray(case.input_row_offsets)
out = cupy.empty((8, 16, 512), dtype=case.q.dtype)
sa = pack_scalar_args(8, 1, kv.max_cache_length, 16)


def serving():
    generic_flare_mla_decode_kv_cache_ragged(q, offs, kv, 0, case.scale, out, sa)


def convenient():
    mla_decode(q, kv, offs, scale=case.scale, q_max_seq_len=1)


for name, fn in (("generic_flare (ScalarArgs)", serving), ("mla_decode", convenient)):
    fn()
    cupy.cuda.Device().synchronize()
    t0 = time.perf_counter()
    for _ in range(300):
        fn()
    t1 = time.perf_counter()
    cupy.cuda.Device().synchronize()
    print(f"{name:28s} host {1e6 * (t1 - t0) / 300:7.1f} us/call  (P={sa.num_partitions})")
prof = cProfile.Profile()
prof.enable()
for _ in range(300):
    serving()
prof.disable()
pstats.Stats(prof).sort_stats("tottime").print_stats(15)
