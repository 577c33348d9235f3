"""The checked mode (``validate="full"`` or ``MLA_CUPY_VALIDATE=1``; docs/spec.md §11).

The host validates shapes and dtypes only; the preconditions on device values
(offsets, cache lengths, table entries, sparse indices) are the caller's.  In
checked mode a small kernel (``kernels/check/mla_check.cu.j2``, variant
``mla_check_inputs``) looks at exactly the entries a decode would read before
the decode runs, and the host copies its per-sequence results back once and
raises a ValueError naming the first offending (argument, sequence, position,
value).  The default path never copies anything back.

The rules are :data:`RULES`, in the order in which "first" is meant: a rule
before a later one, then the lower sequence, then the lower position.  Beyond
the §11 preconditions the checked mode is stricter than the contract in three
places, where the kernels would quietly mask or clip what is almost surely a
caller's mistake: sparse entries in use must be -1 or in range (§5 masks any
other value too), ``topk_lengths`` / ``extra_topk_lengths`` must lie in
``[0, stride]`` (§5 clips them), and ``logical_indices`` in use must be -1 or
a position ``< N_b``.

:func:`find_violation` is the same check in NumPy (tests hold the kernel to it).
"""
from __future__ import annotations

import dataclasses

from . import environment
from typing import NamedTuple

import numpy as np

KEY_SHIFT = 56                       # key = rule << KEY_SHIFT | position
NO_VIOLATION = (1 << 64) - 1
KEY_LIMIT = 2**31                    # C_b + S_b must stay below it (§11.3)
NUM_THREADS = 256
VALIDATE_MODES = ("host", "full")
ENV = environment.VALIDATE


@dataclasses.dataclass(frozen=True)
class Rule:
    name: str        # the C++ enumerator (kernels/check/mla_check.cu.j2)
    argument: str    # what the message names
    where: str       # the position, formatted with b, pos, t, s
    expected: str    # formatted with the call's facts (:func:`_facts`)
    signed_by: str | None = None   # the argument whose dtype says if the raw 32 bits are signed
    got: str = "{value}"           # how the value is shown


RULES = (
    Rule("scalar_batch", "scalar_args_buf", "element 0 (batch_size on the device)",
         "0 <= batch_size <= {host_batch} (the host value the grid was built with)"),
    Rule("offsets_start", "input_row_offsets", "entry 0", "0", "input_row_offsets"),
    Rule("offsets_order", "input_row_offsets", "entry {pos}",
         "at least entry {pos_before} (offsets never decrease)", "input_row_offsets"),
    Rule("offsets_end", "input_row_offsets", "entry {pos} (the last)",
         "T = q.shape[0] = {num_tokens}", "input_row_offsets"),
    Rule("q_max_seq_len", "scalar_args_buf", "sequence {b} (its new tokens S_b)",
         "S_b <= q_max_seq_len = {q_max_seq_len}", got="S_b = {value}"),
    Rule("cache_overflow", "kv_collection.cache_lengths", "sequence {b}",
         "C_b >= 0 with C_b + S_b < 2^31", "kv_collection.cache_lengths", "C_b = {value}"),
    Rule("cache_capacity", "kv_collection.cache_lengths", "sequence {b}",
         "C_b + S_b <= lookup_table.shape[1] * page_size = {capacity} keys (the table's capacity)",
         "kv_collection.cache_lengths", "C_b = {value}"),
    Rule("lookup", "kv_collection.lookup_table", "sequence {b}, page {pos}",
         "a block id in [0, num_blocks = {num_blocks}) for a page holding visible keys",
         "kv_collection.lookup_table"),
    Rule("topk", "topk_lengths", "sequence {b}", "a length in [0, indices_stride = {indices_stride}]"),
    Rule("index", "d_indices", "sequence {b}, row {t}, slot {s}",
         "-1 or an encoded row in [0, num_blocks * page_size = {main_rows_total}) at a slot in use"),
    Rule("logical", "logical_indices", "sequence {b}, row {t}, slot {s}",
         "-1 or a key position in [0, C_b + S_b) at a slot in use"),
    Rule("extra_topk", "extra_topk_lengths", "sequence {b}",
         "a length in [0, extra_indices_stride = {extra_stride}]"),
    Rule("extra_index", "extra_d_indices", "sequence {b}, row {t}, slot {s}",
         "-1 or an encoded row in [0, extra_k num_blocks * page_size = {extra_rows_total}) at a slot in use"),
)
RULE_INDEX = {r.name: i for i, r in enumerate(RULES)}


class Violation(NamedTuple):
    rule: str
    sequence: int
    position: int    # entry of the argument's flat array (offsets, d_indices, ...) or page / sequence
    value: int       # the entry as its dtype reads it


def resolve_validate(validate) -> bool:
    """True for the checked mode: ``validate="full"``, or None with
    MLA_CUPY_VALIDATE=1 (or "full"); ``"host"`` (the default) checks shapes and
    dtypes only."""
    name = "validate"
    if validate is None:
        env = environment.get(environment.VALIDATE) or ""
        mapped = {"": "host", "0": "host", "host": "host", "1": "full", "full": "full"}.get(env)
        if mapped is None:
            raise ValueError(f"{ENV}: expected 0, 1, host or full, got {env!r}")
        validate, name = mapped, ENV
    if not isinstance(validate, str) or validate not in VALIDATE_MODES:
        raise ValueError(f"{name}: expected one of {VALIDATE_MODES} (or None), got {validate!r}"[:200])
    return validate == "full"


@dataclasses.dataclass(frozen=True)
class CallFacts:
    """The host facts a message and the rules need (no device values)."""

    num_tokens: int
    host_batch: int
    q_max_seq_len: int
    capacity: int               # lookup_table.shape[1] * page_size
    num_blocks: int
    indices_stride: int = 0
    main_rows_total: int = 0
    extra_stride: int = 0
    extra_rows_total: int = 0
    signed: frozenset = frozenset()   # arguments whose 32-bit entries are int32


def message(v: Violation, facts: CallFacts) -> str:
    rule = RULES[RULE_INDEX[v.rule]]
    stride = facts.extra_stride if v.rule == "extra_index" else facts.indices_stride
    t, s = divmod(v.position, stride) if rule.where.count("{t}") and stride else (0, 0)
    fmt = dict(dataclasses.asdict(facts), b=v.sequence, pos=v.position, pos_before=v.position - 1,
               t=t, s=s)
    return (f"{rule.argument}: {rule.where.format(**fmt)}: expected {rule.expected.format(**fmt)}, "
            f"got {rule.got.format(value=v.value)}")


def _signed_value(rule: Rule, raw: int, facts: CallFacts) -> int:
    """The kernel stores 32-bit entries zero-extended; int32 arguments are re-signed."""
    if rule.signed_by is not None and rule.signed_by not in facts.signed:
        return raw                       # uint32: the bits are the value
    if rule.signed_by is not None and raw >= 2**31:
        return raw - 2**32
    return raw


def first_of(results: np.ndarray, facts: CallFacts) -> Violation | None:
    """The first violation in the kernel's results ``[B, 2]`` uint64 (rule, then
    sequence, then position)."""
    keys = results[:, 0].astype(np.uint64)
    found = np.flatnonzero(keys != np.uint64(NO_VIOLATION))
    if found.size == 0:
        return None
    rules = (keys[found] >> np.uint64(KEY_SHIFT)).astype(np.int64)
    pos = (keys[found] & np.uint64((1 << KEY_SHIFT) - 1)).astype(np.int64)
    i = np.lexsort((pos, found, rules))[0]
    rule = RULES[int(rules[i])]
    raw = int(results[found[i], 1].astype(np.uint64).view(np.int64))
    if rule.signed_by is not None:
        raw &= 0xFFFFFFFF
    return Violation(rule.name, int(found[i]), int(pos[i]), _signed_value(rule, raw, facts))


def find_violation(*, input_row_offsets, num_tokens, device_batch, host_batch, q_max_seq_len,
                   cache_lengths, lookup_table, page_size, num_blocks, window=None, sparse=None,
                   ) -> Violation | None:
    """The checked mode's rules in NumPy, on host arrays: the first violation or None.

    ``window``: W for a sliding window, else None.  ``sparse``: None (dense) or a
    dict with ``d_indices``, ``topk_lengths``, ``logical_indices`` (only when the
    mask is causal: the null mask never reads them), ``fold``,
    ``main_rows_total``, ``extra_d_indices``, ``extra_topk_lengths``,
    ``extra_rows_total`` (arrays may be None)."""
    offs = np.asarray(input_row_offsets).astype(np.int64)
    num_seqs = len(offs) - 1
    cache = np.asarray(cache_lengths).astype(np.int64)
    table = np.asarray(lookup_table).astype(np.int64)
    found: list[tuple[int, int, int, int]] = []   # (rule index, b, position, value)

    def note(rule, b, pos, value):
        found.append((RULE_INDEX[rule], b, pos, int(value)))

    if not 0 <= device_batch <= host_batch:
        note("scalar_batch", 0, 0, device_batch)
    if num_seqs >= 0 and offs[0] != 0:
        note("offsets_start", 0, 0, offs[0])
    capacity = table.shape[1] * page_size
    for b in range(num_seqs):
        o0, o1 = int(offs[b]), int(offs[b + 1])
        if o1 < o0:
            note("offsets_order", b, b + 1, o1)
        if b == num_seqs - 1 and o1 != num_tokens:
            note("offsets_end", b, b + 1, o1)
        if b >= host_batch or not 0 <= o0 <= o1 <= num_tokens:
            continue
        seq_len, c = o1 - o0, int(cache[b])
        if seq_len > q_max_seq_len:
            note("q_max_seq_len", b, b, seq_len)
        n = c + seq_len
        if c < 0 or n >= KEY_LIMIT:
            note("cache_overflow", b, b, c)
            continue
        if sparse is None:
            if n > capacity:
                note("cache_capacity", b, b, c)
            elif seq_len > 0:
                lo = max(0, c - window + 1) if window else 0
                for p in range(lo // page_size, (n - 1) // page_size + 1):
                    if not 0 <= table[b, p] < num_blocks:
                        note("lookup", b, p, table[b, p])
            continue
        _sparse_violations(note, b, o0, seq_len, n, sparse)
    if not found:
        return None
    rule, b, pos, value = min(found)
    return Violation(RULES[rule].name, b, pos, value)


def _sparse_violations(note, b, tok0, seq_len, num_keys, sp):
    def bad(e, total):
        return e != -1 and not 0 <= e < total

    def in_use(lengths, stride, rule):
        """Slots in use by the length rule of §5 (before the N_b bound), noting a bad length."""
        if lengths is None:
            return stride
        t = int(lengths[b])
        if not 0 <= t <= stride:
            note(rule, b, b, t)
        return max(0, min(stride, t))

    d = np.asarray(sp["d_indices"]).astype(np.int64)
    stride = d.shape[1]
    k = min(in_use(sp.get("topk_lengths"), stride, "topk"), num_keys)
    rows = range(tok0, tok0 + (min(seq_len, 1) if sp.get("fold") else seq_len))
    for t in rows:
        for s in range(k):
            if bad(d[t, s], sp["main_rows_total"]):
                note("index", b, t * stride + s, d[t, s])
    if sp.get("logical_indices") is not None:
        lg = np.asarray(sp["logical_indices"]).astype(np.int64)
        for t in rows:
            for s in range(k):
                if lg[t, s] != -1 and not 0 <= lg[t, s] < num_keys:
                    note("logical", b, t * stride + s, lg[t, s])
    if sp.get("extra_d_indices") is not None:
        ed = np.asarray(sp["extra_d_indices"]).astype(np.int64)
        estride = ed.shape[1]
        ke = in_use(sp.get("extra_topk_lengths"), estride, "extra_topk")
        for t in range(tok0, tok0 + seq_len):
            for e in range(ke):
                if bad(ed[t, e], sp["extra_rows_total"]):
                    note("extra_index", b, t * estride + e, ed[t, e])


def check_on_device(common: dict, kv, sparse, *, stream, device_id, num_tokens, host_batch,
                    q_max_seq_len, mask, window, fold) -> None:
    """Run the check kernel on ``stream`` before the decode, copy its results
    back (the one device-to-host copy of the checked mode) and raise a ValueError
    for the first violation.  ``common``/``sparse`` as the dispatcher builds them."""
    import cupy

    from . import abi
    from .arrays import dtype_name, to_cupy
    from .compiler import get_kernel
    from .variants import CheckKey, Mask

    offsets = common["input_row_offsets"]
    num_seqs = offsets.shape[0] - 1
    ek = sparse.extra_k if sparse is not None else None
    window = window if mask is Mask.SLIDING_WINDOW_CAUSAL else 0
    facts = CallFacts(
        num_tokens=num_tokens, host_batch=host_batch, q_max_seq_len=q_max_seq_len,
        capacity=kv.lookup_table.shape[1] * kv.page_size, num_blocks=kv.num_blocks,
        indices_stride=sparse.indices_stride if sparse is not None else 0,
        main_rows_total=kv.num_blocks * kv.page_size,
        extra_stride=sparse.extra_indices_stride if ek is not None else 0,
        extra_rows_total=ek.num_blocks * ek.page_size if ek is not None else 0,
        signed=frozenset(name for name, x in (
            ("input_row_offsets", offsets), ("kv_collection.cache_lengths", kv.cache_lengths),
            ("kv_collection.lookup_table", kv.lookup_table)) if dtype_name(x) == "int32"))

    def ptr(x, name):
        return None if x is None else to_cupy(x, name)

    results = cupy.empty((num_seqs, 2), dtype=cupy.uint64)
    values = dict(
        input_row_offsets=offsets, num_offsets=num_seqs + 1, num_tokens=num_tokens,
        scalar_args=common["scalar_args"], host_batch=host_batch, q_max_seq_len=q_max_seq_len,
        cache_lengths=common["cache_lengths"], lookup_table=common["lookup_table"],
        lookup_stride=kv.lookup_table.shape[1], page_size=kv.page_size, num_blocks=kv.num_blocks,
        window=window, sparse=int(sparse is not None), fold=int(bool(fold)),
        d_indices=None, indices_stride=facts.indices_stride, topk_lengths=None, logical_indices=None,
        main_rows_total=facts.main_rows_total, extra_d_indices=None, extra_stride=facts.extra_stride,
        extra_topk_lengths=None, extra_rows_total=facts.extra_rows_total, results=results)
    if sparse is not None:
        values.update(
            d_indices=ptr(sparse.d_indices, "d_indices"),
            topk_lengths=ptr(sparse.topk_lengths, "topk_lengths"),
            logical_indices=ptr(sparse.logical_indices, "logical_indices")
            if mask is not Mask.NULL else None,
            extra_d_indices=ptr(sparse.extra_d_indices, "extra_d_indices"),
            extra_topk_lengths=ptr(sparse.extra_topk_lengths, "extra_topk_lengths"))
    kernel = get_kernel(CheckKey(), device_id)
    with stream:
        kernel((num_seqs,), (NUM_THREADS,), abi.CHECK.pack(values))
    violation = first_of(results.get(stream=stream), facts)
    if violation is not None:
        raise ValueError(message(violation, facts))
