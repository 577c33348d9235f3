"""Run the sparse and dense kernels (portable and, on sm_90, Hopper) on adversarial indices under a memory checker.

Usage (GPU machine):
    compute-sanitizer --tool memcheck --error-exitcode 1 \
        env PYTHONPATH=. python3 tools/memcheck_sparse.py

CuPy's memory pool is switched off so every array is its own allocation and an
out-of-bounds read lands outside it, where memcheck sees it.  Each case runs on
this device's grids and on those of a two-SM device (testing.grid_for_sms: the
pair schedule's CTAs then run several jobs).  The cases are
mla_cupy.sanitize_cases.memcheck_cases (shared with tools/sanitize_all.py,
which runs every variant family under memcheck, racecheck and initcheck).
"""
import os

import numpy as np

import cupy

from mla_cupy.sanitize_cases import memcheck_cases
from mla_cupy.testing import check_case, grid_for_sms

cupy.cuda.set_allocator(None)
for i, case in enumerate(memcheck_cases(np.random.default_rng(2026))):
    # sms=2 also: the pair schedule's grid with one z (each CTA runs every job)
    for sms in (None, 2):
        for p in (1, 5, None):   # (None: the dispatcher's split under MLA_CUPY_SPLIT=segments)
            os.environ["MLA_CUPY_SPLIT"] = "segments" if p is None else "auto"
            with grid_for_sms(sms):
                cmp, *_ = check_case(case, num_partitions=p)   # with lse and with lse=None
            print(f"case {i} P={p}{f' sms={sms}' if sms else ''}: {'PASS' if cmp.ok else 'FAIL'} {cmp.message}",
                  flush=True)
            assert cmp.ok, case.describe()
print("memcheck cases done")
