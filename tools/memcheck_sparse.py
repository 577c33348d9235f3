"""Run the sparse and dense kernels (portable and, on sm_90, Hopper) on adversarial indices under a memory checker.

Usage (GPU machine):
    compute-sanitizer --tool memcheck --error-exitcode 1 \
        env PYTHONPATH=. python3 tools/memcheck_sparse.py

CuPy's memory pool is switched off so every array is its own allocation and an
out-of-bounds read lands outside it, where memcheck sees it.  Indices include
-1, -2^31, 2^31-1, num_blocks*page_size and beyond; topk lengths negative and
past the stride; lookup tables hold 2^31-1 sentinels past the used pages.
"""
import numpy as np

import cupy

from mla_cupy.testing import check_case, make_case, make_sparse_case

cupy.cuda.set_allocator(None)
rng = np.random.default_rng(2026)
cases = []
for fold in (False, True):
    for extra in (0, 7, 65):
        cases.append(make_sparse_case(rng, seq_lens=[3, 0, 2, 1], cache_lens=[0, 5, 300, 64],
                                      indices_stride=130, num_heads=20, fold=fold, topk="random",
                                      logical=fold, extra_stride=extra, extra_page_size=3,
                                      extra_topk="random", valid_fraction=0.5, sink="random"))
for layout in ("fp8_ds_mla", "fp8_rope_aware"):
    cases.append(make_sparse_case(rng, seq_lens=[2, 0, 1], cache_lens=[9, 5, 300], layout=layout,
                                  indices_stride=70, num_heads=16, fold=True, topk="random",
                                  extra_stride=9, extra_page_size=3, valid_fraction=0.5))
cases.append(make_case(rng, seq_lens=[1, 4, 0], cache_lens=[0, 129, 70], num_heads=16,
                       page_size=16, mask="sliding_window_causal", window=40))
cases.append(make_case(rng, seq_lens=[2, 1], cache_lens=[100, 7], num_heads=20, page_size=3,
                       layout="fp8", q_fp8=True))
# dense 16-bit: on sm_90 these run the Hopper (wgmma) kernels
cases.append(make_case(rng, seq_lens=[2, 0, 3], cache_lens=[300, 4, 0], num_heads=128,
                       page_size=1, mask="null", sink="random"))
cases.append(make_case(rng, seq_lens=[1, 2], cache_lens=[700, 33], num_heads=20, page_size=64,
                       d_qk=512, dtype=np.float16, mask="causal"))
for i, case in enumerate(cases):
    for p in (1, 5):
        cmp, *_ = check_case(case, num_partitions=p)   # with lse and with lse=None
        print(f"case {i} P={p}: {'PASS' if cmp.ok else 'FAIL'} {cmp.message}", flush=True)
        assert cmp.ok, case.describe()
print("memcheck cases done")
