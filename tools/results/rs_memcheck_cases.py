"""Forced-narrow sparse cases with garbage indices, for compute-sanitizer memcheck of the
narrow kernel's RS form (session 42's device scripts, next_rs_call{1,2}.sh).

ROWS 16: h16 unfolded (s_q 1) and h8 folded at s_q 2; ROWS 32: h32 unfolded and h16 folded
at s_q 2.  Both fp8 layouts, half the indices garbage, an extra stream, a sink, P 1 and 3.

    MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. compute-sanitizer --tool memcheck \\
        --error-exitcode 1 python3 tools/results/rs_memcheck_cases.py ROWS SEED
"""
import sys

import numpy as np

import cupy

from mla_cupy.testing import check_case, make_sparse_case

rows, seed = int(sys.argv[1]), int(sys.argv[2])
shapes = {16: ((False, 16, [1, 0, 1]), (True, 8, [2, 0, 1])),
          32: ((False, 32, [1, 0, 1]), (True, 16, [2, 0, 2]))}[rows]
cupy.cuda.set_allocator(None)   # every array its own allocation: an overrun leaves it
rng = np.random.default_rng(seed)
for layout in ("fp8_ds_mla", "fp8"):
    for fold, heads, seq_lens in shapes:
        case = make_sparse_case(rng, seq_lens=seq_lens, cache_lens=[9, 5, 300], layout=layout,
                                indices_stride=70, num_heads=heads, fold=fold, topk="random",
                                extra_stride=9, extra_page_size=3, valid_fraction=0.5, sink="random")
        for p in (1, 3):
            cmp, *_ = check_case(case, num_partitions=p)
            print(layout, "fold" if fold else "", f"P={p}", "PASS" if cmp.ok else "FAIL", cmp.message, flush=True)
            assert cmp.ok, case.describe()
print(f"rs memcheck cases ({rows} rows) done")
