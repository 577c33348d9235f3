"""CPU side of "masked means never read" (docs/spec.md §11): poison_unread fills
every row the decode must not read with NaN, +inf and -inf, and the NumPy
reference (the contract) gives bit-identical results; the GPU tests
(tests/test_gpu_hardening.py) hold the kernels to the same."""
from __future__ import annotations

import numpy as np
import pytest

from mla_cupy.testing import LAYOUTS, make_case, make_sparse_case, poison_unread, read_rows, reference


def _same(a, b):
    return all(np.array_equal(x, y, equal_nan=True) for x, y in zip(a, b))


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mask", ["null", "causal", "sliding_window_causal"])
def test_dense_poison_leaves_the_reference_unchanged(rng, layout, mask):
    case = make_case(rng, seq_lens=[1, 3, 0, 2], cache_lens=[40, 5, 9, 100], num_heads=4, page_size=16,
                     layout=layout, mask=mask, window=20, num_layers=2, layer_idx=1)
    poisoned = poison_unread(case)
    assert _same(reference(case), reference(poisoned))
    rows = poisoned.blocks.reshape(-1, poisoned.blocks.shape[-1])
    if layout in ("bf16", "fp16"):   # all three poisons are there
        first = rows[:, 0].astype(np.float32)
        assert np.isnan(first).any() and (first == np.inf).any() and (first == -np.inf).any()


@pytest.mark.parametrize("layout", LAYOUTS)
@pytest.mark.parametrize("mask", ["null", "causal"])
@pytest.mark.parametrize("fold", [False, True])
def test_sparse_poison_leaves_the_reference_unchanged(rng, layout, mask, fold):
    case = make_sparse_case(rng, seq_lens=[2, 1, 3], cache_lens=[10, 7, 4], indices_stride=24, num_heads=4,
                            page_size=8, topk="random", logical=mask == "causal", extra_stride=5,
                            extra_topk="random", layout=layout, mask=mask, fold=fold)
    poisoned = poison_unread(case)
    assert _same(reference(case), reference(poisoned))


def test_rows_behind_hidden_slots_are_poisoned(rng):
    """The helper poisons live rows that only masked slots point at (not only the
    already-dead ones): sparse causal with a slot hidden from its only token."""
    case = make_sparse_case(rng, seq_lens=[2], cache_lens=[5], indices_stride=8, num_heads=4, page_size=8,
                            valid_fraction=1.0)
    # N_0 = 7: slots 0..6 in use; slot 6 > C_0 + 0 is hidden from token 0 (row 0)
    d = case.sparse["d_indices"]
    visible = {int(e) for e in d[0, :6]} | {int(e) for e in d[1, :7]}
    live = np.flatnonzero(np.isfinite(case.blocks[:, 0, :, 0].astype(np.float32)).reshape(-1))
    hidden = int(next(r for r in live if int(r) not in visible))
    d[0, 6] = hidden
    main, _ = read_rows(case)
    assert {blk * 8 + slot for blk, slot in main} == visible
    assert np.isfinite(case.blocks[hidden // 8, 0, hidden % 8].astype(np.float32)).all()
    row = poison_unread(case).blocks[hidden // 8, 0, hidden % 8].astype(np.float32)
    assert not np.isfinite(row).any()
