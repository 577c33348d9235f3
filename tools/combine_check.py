"""The split-KV combine against the NumPy reference with a NaN-filled workspace:
a partial the decode did not write, or one the combine weighs wrongly, shows as
NaN or a wrong row.  Split counts 2..1100 (one to eight groups of 128 threads,
more partitions than the combine caches, mostly empty splits), 5/8/16/128 heads,
bf16 and fp16, on the default kernels and with the portable family forced.

    PYTHONPATH=.:tests python3 tools/combine_check.py
"""
import os

import numpy as np


def main() -> int:
    from mla_cupy import dispatch
    from mla_cupy.environment import BACKEND
    from mla_cupy.testing import check_against_reference, make_case, nan_workspace

    dispatch._owned_workspace = nan_workspace
    failures = 0
    for backend in ("auto", "portable"):
        os.environ[BACKEND] = backend
        dispatch._workspaces.clear()
        dispatch._eager_plans.clear()
        rng = np.random.default_rng()
        seed = int(rng.integers(1 << 31))
        rng = np.random.default_rng(seed)
        for h, seqs, caches, layout in ((16, [1, 2], [5000, 4097], "bf16"), (128, [1, 3, 0], [9000, 700, 64], "bf16"),
                                        (8, [2, 1], [3000, 10], "fp16"), (5, [1, 2], [3000, 500], "bf16")):
            case = make_case(rng, seq_lens=seqs, cache_lens=caches, num_heads=h, page_size=64, sink="random",
                             layout=layout)
            for p in (2, 3, 4, 5, 9, 33, 64, 1100):
                try:
                    check_against_reference(case, num_partitions=p)
                except AssertionError as e:
                    failures += 1
                    print(f"FAIL backend={backend} seed={seed} P={p}: {str(e)[:400]}")
    print(f"combine check: {failures} failures")
    return 1 if failures else 0


if __name__ == "__main__":
    raise SystemExit(main())
