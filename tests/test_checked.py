"""The checked mode on the CPU: the NumPy rules (mla_cupy.checked.find_violation,
which the GPU tests hold the check kernel to), how the kernel's results are
read back and reported, and the validate= / MLA_CUPY_VALIDATE argument.  The
kernel itself compiles in test_compile (variant mla_check_inputs) and runs in
tests/test_gpu_hardening.py."""
from __future__ import annotations

import re

import numpy as np
import pytest

from mla_cupy import checked
from mla_cupy.checked import KEY_SHIFT, NO_VIOLATION, RULE_INDEX, Violation, find_violation, first_of, message
from mla_cupy.testing import (checked_mode_facts, checked_mode_inputs, make_case, make_sparse_case,
                              only_minus_one)
from test_errors import PastValidation, baseline, call, past_validation, scalar_args  # noqa: F401


def violation(case, **kw):
    return find_violation(**checked_mode_inputs(case, **kw))


def dense(rng, **kw):
    kw = dict(seq_lens=[1, 3, 0, 2], cache_lens=[70, 5, 9, 300], num_heads=4, page_size=16) | kw
    return make_case(rng, **kw)


def sparse(rng, **kw):
    kw = dict(seq_lens=[2, 1, 3], cache_lens=[100, 7, 40], indices_stride=24, num_heads=4,
              page_size=8, topk="random", logical=True, extra_stride=5, extra_topk="random") | kw
    return only_minus_one(make_sparse_case(rng, **kw))


@pytest.mark.parametrize("mask", ["null", "causal", "sliding_window_causal"])
def test_valid_dense_cases_pass(rng, mask):
    # make_case leaves 2^31-1 sentinels in table entries no visible key needs
    case = dense(rng, mask=mask, window=20)
    assert (case.lookup_table == 2**31 - 1).any()
    assert violation(case) is None


@pytest.mark.parametrize("fold", [False, True])
@pytest.mark.parametrize("mask", ["null", "causal"])
def test_valid_sparse_cases_pass_and_garbage_in_use_does_not(rng, fold, mask):
    raw = make_sparse_case(rng, seq_lens=[2, 1, 3], cache_lens=[100, 7, 40], indices_stride=24,
                           num_heads=4, page_size=8, fold=fold, mask=mask, valid_fraction=0.3)
    assert violation(only_minus_one(raw)) is None
    v = violation(raw)   # garbage indices (-2^31, 2^31-1, past the end) at slots in use
    assert v is not None and v.rule == "index"


def _set(case, key, idx, value):
    arr = case.sparse[key] if case.sparse is not None and key in case.sparse else getattr(case, key)
    arr[idx] = value


@pytest.mark.parametrize("rule,mutate,expect", [
    ("offsets_start", lambda c: _set(c, "input_row_offsets", 0, 1), (0, 0, 1)),
    ("offsets_order", lambda c: _set(c, "input_row_offsets", 2, 0), (1, 2, 0)),
    ("offsets_end", lambda c: _set(c, "input_row_offsets", 4, 5), (3, 4, 5)),
    ("cache_overflow", lambda c: _set(c, "cache_lengths", 1, 2**31 - 2), (1, 1, 2**31 - 2)),
    ("cache_capacity", lambda c: _set(c, "cache_lengths", 3, c.lookup_table.shape[1] * 16 - 1),
     (3, 3, None)),
    ("lookup", lambda c: _set(c, "lookup_table", (3, 2), c.blocks.shape[0]), (3, 2, None)),
])
def test_each_dense_rule(rng, rule, mutate, expect):
    case = dense(rng)
    mutate(case)
    v = violation(case)
    b, pos, value = expect
    assert v == Violation(rule, b, pos, v.value) and (value is None or v.value == value), v
    text = message(v, checked_mode_facts(case))
    assert text.startswith(f"{checked.RULES[RULE_INDEX[rule]].argument}: ") and text.endswith(f"{v.value}")


def test_q_max_seq_len_and_device_batch(rng):
    case = dense(rng)
    v = violation(case, q_max_seq_len=2)
    assert v == Violation("q_max_seq_len", 1, 1, 3)
    assert "S_b <= q_max_seq_len = 2, got S_b = 3" in message(v, checked_mode_facts(case, q_max_seq_len=2))
    assert violation(case, device_batch=5) == Violation("scalar_batch", 0, 0, 5)
    assert violation(case, device_batch=-1) == Violation("scalar_batch", 0, 0, -1)


def test_int32_arrays_report_negative_values(rng):
    case = dense(rng)
    case.cache_lengths = case.cache_lengths.astype(np.int32)
    case.lookup_table = case.lookup_table.astype(np.int32)   # the sentinels become -1
    case.cache_lengths[2] = -4
    assert violation(case) == Violation("cache_overflow", 2, 2, -4)
    case.cache_lengths[2] = 9
    assert violation(case) is None   # -1 sentinels sit only in unused pages
    case.lookup_table[1, 0] = -1
    v = violation(case)
    assert v == Violation("lookup", 1, 0, -1)
    assert "kv_collection.lookup_table: sequence 1, page 0: expected a block id in [0, num_blocks = " \
        in message(v, checked_mode_facts(case))


def test_only_visible_pages_count(rng):
    """Pages before a sliding window and past N_b are not read, so not checked;
    a sequence without new tokens reads no page."""
    case = dense(rng, mask="sliding_window_causal", window=20)
    case.lookup_table[3, 0] = 10**6            # keys 0..15: the window of sequence 3 starts at 281
    case.lookup_table[2, :] = 10**6            # S_2 = 0
    assert violation(case) is None
    case.lookup_table[3, 17] = 10**6           # key 272..287 holds visible keys
    assert violation(case) == Violation("lookup", 3, 17, 10**6)


def test_rule_order_decides_first_then_sequence_then_position(rng):
    case = dense(rng)
    case.lookup_table[0, 0] = 10**6
    case.cache_lengths[3] = 2**31 - 1
    assert violation(case).rule == "cache_overflow"        # an earlier rule wins over sequence 0
    case.cache_lengths[3] = 300
    case.lookup_table[3, 1] = 10**6
    assert violation(case) == Violation("lookup", 0, 0, 10**6)
    case.lookup_table[0, 0] = case.lookup_table[1, 0]
    case.lookup_table[3, 0] = 10**7
    assert violation(case) == Violation("lookup", 3, 0, 10**7)


@pytest.mark.parametrize("rule,key,idx,value,expect_pos", [
    ("topk", "topk_lengths", 1, 25, 1), ("topk", "topk_lengths", 2, -1, 2),
    ("index", "d_indices", (1, 3), -2, 1 * 24 + 3), ("index", "d_indices", (0, 0), 2**31 - 1, 0),
    ("logical", "logical_indices", (3, 1), -5, 3 * 24 + 1),
    ("extra_topk", "extra_topk_lengths", 0, 6, 0),
    ("extra_index", "extra_d_indices", (5, 4), 10**6, 5 * 5 + 4),
])
def test_each_sparse_rule(rng, rule, key, idx, value, expect_pos):
    case = sparse(rng)
    case.sparse["topk_lengths"][:] = 24
    case.sparse["extra_topk_lengths"][:] = 5
    _set(case, key, idx, value)
    v = violation(case)
    assert v is not None and (v.rule, v.position, v.value) == (rule, expect_pos, value), v
    text = message(v, checked_mode_facts(case))
    argument = checked.RULES[RULE_INDEX[rule]].argument
    if isinstance(idx, tuple):
        stride = case.sparse[key].shape[1]
        assert text.startswith(f"{argument}: sequence {v.sequence}, row {idx[0]}, slot {idx[1]}: "), text
        assert expect_pos // stride == idx[0]
    assert text.endswith(f"got {value}")


def test_sparse_entries_not_read_are_not_checked(rng):
    case = sparse(rng, fold=True, seq_lens=[3, 1], cache_lens=[50, 4])
    case.sparse["topk_lengths"][:] = [10, 24]
    case.sparse["d_indices"][0, 10:] = -7          # past k_0
    case.sparse["d_indices"][1:3, :] = -7          # folded: only the first token's row is read
    case.sparse["d_indices"][3, 5:] = -7           # k_1 = min(24, N_1 = 5)
    case.sparse["logical_indices"][1:3, :] = 10**6
    assert violation(case) is None
    case.mask = "null"                             # logical positions are not read at all
    case.sparse["logical_indices"][0, 0] = -9
    assert violation(case) is None
    case.mask = "causal"
    assert violation(case) == Violation("logical", 0, 0, -9)


def test_first_of_reads_the_kernel_results():
    facts = checked.CallFacts(num_tokens=4, host_batch=3, q_max_seq_len=2, capacity=64,
                              num_blocks=8, signed=frozenset({"kv_collection.lookup_table"}))
    none = np.full((3, 2), NO_VIOLATION, dtype=np.uint64)
    none[:, 1] = 0
    assert first_of(none, facts) is None

    def key(rule, pos):
        return (RULE_INDEX[rule] << KEY_SHIFT) | pos
    res = none.copy()
    res[2] = [key("lookup", 1), 0xFFFFFFFF]              # int32 table: -1
    res[1] = [key("lookup", 7), 9]
    assert first_of(res, facts) == Violation("lookup", 1, 7, 9)
    res[1] = none[1]
    assert first_of(res, facts) == Violation("lookup", 2, 1, -1)
    unsigned = checked.CallFacts(**{**facts.__dict__, "signed": frozenset()})
    assert first_of(res, unsigned) == Violation("lookup", 2, 1, 2**32 - 1)
    res[0] = [key("scalar_batch", 0), np.uint64(2**64 - 3)]   # int64 -3
    assert first_of(res, facts) == Violation("scalar_batch", 0, 0, -3)


def test_the_rendered_kernel_has_the_rules_in_order():
    from mla_cupy.render import render
    from mla_cupy.variants import CheckKey
    src = render(CheckKey())
    assert f"enum class Rule : u64 {{ {', '.join(r.name for r in checked.RULES)} }};" in src
    for r in checked.RULES:
        assert f"Rule::{r.name}" in src, r.name   # every rule is checked somewhere
    # each rule appears in the kernel after the one before it: a thread's first is its smallest
    firsts = [src.index(f"Rule::{r.name}") for r in checked.RULES]
    assert firsts == sorted(firsts)


@pytest.mark.parametrize("env,expected", [("", False), ("0", False), ("host", False), ("1", True),
                                          ("full", True)])
def test_environment_turns_the_checked_mode_on(monkeypatch, env, expected):
    monkeypatch.setenv(checked.ENV, env)
    assert checked.resolve_validate(None) is expected
    assert checked.resolve_validate("host") is False and checked.resolve_validate("full") is True


def test_bad_validate_values(monkeypatch):
    monkeypatch.setenv(checked.ENV, "yes")
    with pytest.raises(ValueError, match=f"^{checked.ENV}: expected"):
        checked.resolve_validate(None)
    for bad in ("Full", 1, True, np.array([1])):
        with pytest.raises(ValueError, match="^validate: expected"):
            checked.resolve_validate(bad)


@pytest.mark.parametrize("kw,exc,name", [
    (dict(validate="strict"), ValueError, "validate"),
    (dict(batch_invariant="yes"), TypeError, "batch_invariant"),
    (dict(batch_invariant=True), ValueError, "scalar_args_buf"),   # a batch-dependent split
])
def test_entry_point_rejects_before_launch(past_validation, kw, exc, name):  # noqa: F811
    with pytest.raises(exc, match=f"^{re.escape(name)}"):
        call(baseline() | kw)


@pytest.mark.parametrize("kw", [dict(validate="full"), dict(validate="host"), dict(validate=None),
                                dict(batch_invariant=True, num_partitions_in=3),
                                dict(batch_invariant=True, scalar_args_buf=scalar_args()
                                     .__class__(**{**scalar_args().__dict__, "batch_invariant": True}))])
def test_entry_point_accepts(past_validation, kw):  # noqa: F811
    with pytest.raises(PastValidation):
        call(baseline() | kw)
