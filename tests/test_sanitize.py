"""The sanitizer sweep's plumbing on the CPU: its families cover every decode
variant family, its cases are hostile, and the summary reads compute-sanitizer's
logs (the GPU run is tools/sanitize_all.py)."""
from __future__ import annotations

import importlib.util
import os

import numpy as np

from mla_cupy.sanitize_cases import family_items, memcheck_cases
from mla_cupy.variants import DecodeKey, all_variants

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
spec = importlib.util.spec_from_file_location("sanitize_all", os.path.join(REPO, "tools", "sanitize_all.py"))
sanitize_all = importlib.util.module_from_spec(spec)
spec.loader.exec_module(sanitize_all)


def _family(key: DecodeKey) -> str:
    name = f"{key.sparsity.value}_{key.layout.value}_{key.mask.value}"
    if key.sparsity.value == "sparse":
        name += f"_fold{int(key.fold)}"
    return name + ("_qk512" if key.d_qk == 512 else "") + ("_qfp8" if key.q_fp8 else "")


def test_every_decode_family_has_a_case_on_each_backend():
    items = family_items(np.random.default_rng(0), hopper=True)
    have = {i.family for i in items}
    for key in all_variants():
        if isinstance(key, DecodeKey):
            assert f"{_family(key)}/{key.backend.value}" in have, key.name
    assert len(items) == len(have)


def test_quick_is_a_subset_reaching_every_kernel_family():
    rng = np.random.default_rng(0)
    full = {i.family for i in family_items(rng, hopper=True)}
    quick = [i for i in family_items(rng, quick=True, hopper=True)]
    names = {i.family for i in quick}
    assert names <= full and len(names) < len(full) / 4
    assert any(n.startswith("sparse_") for n in names) and any(n.endswith("/hopper") for n in names)
    assert any("fp8" in n for n in names) and any("fold1" in n for n in names)
    assert not any(i.family.endswith("/hopper") for i in family_items(rng, quick=True))


def test_cases_are_hostile():
    items = family_items(np.random.default_rng(1))
    sparse = [i.case for i in items if i.case.sparse is not None]
    indices = np.concatenate([c.sparse["d_indices"].ravel() for c in sparse])
    for garbage in (-1, -2**31, 2**31 - 1):
        assert (indices == garbage).any()
    assert any((c.sparse["topk_lengths"] < 0).any() for c in sparse)
    dense16 = [i.case for i in items if i.case.sparse is None and i.case.kv_layout == "bf16"]
    rows = np.concatenate([c.blocks.reshape(-1, c.blocks.shape[-1])[:, 0].astype(np.float32) for c in dense16])
    assert np.isnan(rows).any() and np.isposinf(rows).any() and np.isneginf(rows).any()
    cases = memcheck_cases(np.random.default_rng(2026))
    assert len(cases) == 18
    # the Hopper kernels memcheck must reach on sm_90: the sparse producer ring at 128 heads
    # (fp8_ds_mla) and with fp8 rows, the dense producer ring (fp8_ds_mla, fp8), the
    # seesaw (128 heads, bf16) and the narrow kernel (16 heads, one token a sequence)
    assert any(c.sparse is not None and not c.sparse["fold_shared_index"] and c.kv_layout == "fp8_ds_mla"
               and c.q.shape[1] == 128 for c in cases)
    assert any(c.sparse is None and c.kv_layout == "fp8_ds_mla" for c in cases)
    assert any(c.sparse is None and c.kv_layout == "fp8" and c.q_scale is None for c in cases)
    assert any(c.sparse is not None and c.kv_layout == "fp8" and c.q.shape[1] >= 64 for c in cases)
    assert any(c.sparse is None and c.kv_layout == "bf16" and c.q.shape[1] == 128 for c in cases)
    assert any(c.sparse is None and c.kv_layout == "bf16" and c.q.shape[1] == 16
               and int(np.diff(c.input_row_offsets).max()) == 1 for c in cases)


def test_summary_lines_read_the_sanitizer_logs():
    cases = "variant a\nvariant b\nvariant a\nsanitize cases: 2 variants, 0 failures\n"
    line, ok = sanitize_all.summarize("memcheck", cases + "========= ERROR SUMMARY: 0 errors\n", 0)
    assert (line, ok) == ("memcheck: 2 variants, 0 errors", True)
    line, ok = sanitize_all.summarize("initcheck", cases + "========= ERROR SUMMARY: 3 errors\n", 1)
    assert line == "initcheck: 2 variants, 3 errors" and not ok
    races = "========= RACECHECK SUMMARY: 2 hazards displayed (1 error, 1 warning)\n"
    line, ok = sanitize_all.summarize("racecheck", cases + races, 0)
    assert line == "racecheck: 2 variants, 1 errors (1 warnings)" and not ok
    line, ok = sanitize_all.summarize("memcheck", "variant a\n", 1)
    assert "no summary" in line and "did not finish" in line and not ok
    failed = "variant a\nsanitize cases: 1 variants, 2 failures\n========= ERROR SUMMARY: 0 errors\n"
    line, ok = sanitize_all.summarize("memcheck", failed, 1)
    assert "2 cases FAILED" in line and not ok
