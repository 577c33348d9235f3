"""``mla-cupy bench`` (mla_cupy/bench.py, mla_cupy/peers.py): the case tables,
the FLOP/byte model, the report schema, the ratio column, peers that cannot
run, argument errors, and the correctness check on host arrays (CPU); one
small end-to-end run on the GPU (marked ``gpu``)."""
from __future__ import annotations

import argparse
import dataclasses
import json
import math
import re
import sys

import numpy as np
import pytest

from mla_cupy import bench as B
from mla_cupy import peers as P
from mla_cupy.reference import mla_decode_reference

CEILINGS = dict(copy_tb_s=4.21, matmul_tflop_s=779.0, matmul_source="test")


def parse(*argv):
    ap = argparse.ArgumentParser(prog="mla-cupy bench")
    B.add_arguments(ap)
    return ap.parse_args([str(a) for a in argv])


# ------------------------------------------------------------------ case tables


def test_issue8_and_issue9_tables_are_the_named_cases():
    assert [c.name for c in B.SUITES["issue8"]] == [
        "b128_h16_s8192", "b128_h128_s8192", "b128_sq2_h128_varlen_causal", "b1_h128_s65536",
        "b8_h16_s8192", "b32_h128_s4096"]
    shapes = [(c.batch_size, c.q_len, c.num_heads) for c in B.SUITES["sparse"]]
    assert shapes == [(128, 2, 128), (128, 1, 128), (128, 1, 64), (64, 2, 128), (2, 2, 128), (128, 1, 16)]
    for c in B.SUITES["sparse"]:
        assert (c.layout, c.page_size, c.num_keys, c.sparse_topk, c.sink) == ("fp8_ds_mla", 64, 32768, 2048, True)
    assert B.SUITES["default"] == B.SUITES["issue8"] + B.SUITES["sparse"]


def test_every_named_case_is_well_formed_and_its_name_matches_its_shape():
    names = [c.name for c in B.SUITES["all"]]
    assert len(names) == len(set(names)) == len(B.NAMED_CASES)
    for c in B.SUITES["all"]:
        assert c.page_size == 64, c
        for label, value in (("b", c.batch_size), ("h", c.num_heads), ("s", c.num_keys)):
            found = re.search(rf"_{label}(\d+)(_|$)", "_" + c.name)
            if found:
                assert int(found.group(1)) == value, c
        found = re.search(r"_sq(\d+)", c.name)
        assert (int(found.group(1)) if found else 1) == c.q_len, c
        assert ("varlen" in c.name or "ragged" in c.name) == (c.lengths == "normal"), c
        assert B.flops(c) > 0 and B.bytes_moved(c) > 0


def test_case_named_reads_the_sparse_family_by_its_canonical_name_only():
    assert B.case_named("sparse_ds_mla_b2_sq2_h128") is B.NAMED_CASES["sparse_ds_mla_b2_sq2_h128"]
    c = B.case_named("sparse_ds_mla_b66_sq1_h128_top4096")
    assert (c.batch_size, c.q_len, c.num_heads, c.sparse_topk) == (66, 1, 128, 4096)
    assert (c.layout, c.mask, c.num_keys, c.sink) == ("fp8_ds_mla", "null", 32768, True)
    assert c.name == "sparse_ds_mla_b66_sq1_h128_top4096"
    assert B.case_named("sparse_ds_mla_b7_sq1_h64") == B.sparse_ds_mla_case(7, 1, 64)
    for bad in ("sparse_ds_mla_b2_sq2_h128_top2048", "sparse_ds_mla_b02_sq1_h128", "b7_h16_s8192",
                "sparse_ds_mla_b2_sq2_h128_fold"):
        with pytest.raises(ValueError, match="CASE: expected"):
            B.case_named(bad)
    with pytest.raises(ValueError, match="num_heads"):
        B.case_named("sparse_ds_mla_b2_sq2_h256")


def test_fp8_suite_pairs_each_fp8_layout_with_the_bf16_case_of_its_shape():
    suite = B.SUITES["fp8"]
    assert [c.name for c in suite] == [
        "b128_h16_s8192", "fp8_b128_h16_s8192", "fp8_ds_mla_b128_h16_s8192",
        "b128_h32_s8192", "fp8_b128_h32_s8192", "fp8_ds_mla_b128_h32_s8192",
        "b128_h128_s8192", "fp8_b128_h128_s8192", "fp8_ds_mla_b128_h128_s8192"]
    for c in suite:
        ref = B.NAMED_CASES[f"b128_h{c.num_heads}_s8192"]
        assert dataclasses.replace(c, name=ref.name, layout="bf16") == ref
        assert c in B.SUITES["all"]


def test_sparse_more_suite_is_issue9s_rows_without_a_peer():
    """Sparse rows FlashMLA cannot run: other layouts at h128, fewer heads, and
    folded s_q > 1 (the bytes counted once a sequence: its rows are shared)."""
    from mla_cupy.peers import PEERS
    suite = B.SUITES["sparse_more"]
    assert {c.layout for c in suite} == {"bf16", "fp8", "fp8_ds_mla"}
    assert any(c.fold and c.q_len == 4 for c in suite) and all(c.sparse for c in suite)
    for c in suite:
        assert all(PEERS[p].unsupported(c) for p in PEERS), c.name
        if c.fold:
            unfolded = dataclasses.replace(c, fold=False)
            assert B.bytes_moved(unfolded) - B.bytes_moved(c) == (c.q_len - 1) * c.batch_size * 2048 * c.row_bytes
            assert B.flops(unfolded) == B.flops(c)
    with pytest.raises(ValueError, match="fold: fold_shared_index needs a sparse case"):
        B.BenchCase("x", 1, 16, 2, 100, fold=True)


def test_deepseek_suite_covers_heads_by_query_lengths_by_lengths():
    got = {(c.num_heads, c.q_len, c.lengths) for c in B.SUITES["deepseek"]}
    assert got == {(h, s, lens) for h in (16, 32, 64, 128) for s in (1, 2, 4) for lens in B.LENGTHS}
    assert len(B.SUITES["deepseek"]) == 24


def test_varlen_lengths_are_seeded_normal_and_at_least_q_len():
    case = B.NAMED_CASES["b128_sq2_h128_varlen_causal"]
    counts = case.key_counts()
    assert np.array_equal(counts, case.key_counts())              # fixed seed
    assert counts.min() >= case.q_len and len(np.unique(counts)) > 64
    assert abs(counts.mean() - 8192) < 1200 and 2500 < counts.std() < 5500, (counts.mean(), counts.std())
    other = dataclasses.replace(case, seed=1).key_counts()
    assert not np.array_equal(counts, other)


@pytest.mark.parametrize("field,value,exc", [
    ("num_heads", 129, ValueError), ("num_heads", 0, ValueError), ("q_len", 0, ValueError),
    ("num_keys", 0, ValueError), ("batch_size", 2.0, TypeError), ("layout", "fp8_rope_aware", ValueError),
    ("mask", "sliding_window_causal", ValueError), ("lengths", "zipf", ValueError),
    ("sparse_topk", -1, ValueError)])
def test_bad_case_fields_raise_naming_the_field(field, value, exc):
    base = dict(name="x", batch_size=2, num_heads=16, q_len=1, num_keys=100)
    with pytest.raises(exc, match=field):
        B.BenchCase(**{**base, field: value})


# ------------------------------------------------------------------ model numbers


def test_flop_and_byte_formulas_on_known_shapes():
    c = B.NAMED_CASES["b128_h16_s8192"]
    assert B.flops(c) == 2 * 16 * 1 * 8192 * (576 + 512) * 128
    assert B.bytes_moved(c) == 128 * 8192 * 1152 + 128 * 16 * 576 * 2 + 128 * 16 * 512 * 2
    # issue 8's floors: 288 us memory-bound at 4.21 TB/s, 375 us compute-bound at 779 TFLOP/s
    assert round(B.floor_us(B.flops(c), B.bytes_moved(c), 4.21, 779.0)) == 288
    c = B.NAMED_CASES["b128_h128_s8192"]
    assert round(B.floor_us(B.flops(c), B.bytes_moved(c), 4.21, 779.0)) == 375
    # sparse: top-k keys per token, each token's own 656-byte rows
    c = B.NAMED_CASES["sparse_ds_mla_b128_sq2_h128"]
    assert B.flops(c) == 2 * 128 * 2 * 2048 * 1088 * 128
    assert B.bytes_moved(c) == 256 * 2048 * 656 + 256 * 128 * (576 + 512) * 2
    # issue 9: FlashMLA's 357.6 us on this row is 408 TFLOP/s
    assert round(B.rates(c, 357.6, CEILINGS)["tflop_s"]) == 408


def test_varlen_model_numbers_sum_over_sequences():
    c = B.NAMED_CASES["b128_sq2_h128_varlen_causal"]
    n = c.key_counts().sum()
    assert B.flops(c) == 2 * 128 * 2 * 1088 * n
    assert B.bytes_moved(c) == n * 1152 + 256 * 128 * (576 + 512) * 2


def test_rates_and_roofline_percentage():
    c = B.NAMED_CASES["b128_h16_s8192"]
    floor = B.floor_us(B.flops(c), B.bytes_moved(c), 4.21, 779.0)
    r = B.rates(c, 2 * floor, CEILINGS)
    assert r["roofline_pct"] == pytest.approx(50.0)
    assert r["tb_s"] == pytest.approx(4.21 / 2)
    assert r["tflop_s"] == pytest.approx(B.flops(c) / (2 * floor * 1e-6) / 1e12)
    # no matmul ceiling (nan): the memory floor alone
    assert B.floor_us(1e12, 4.21e6, 4.21, math.nan) == pytest.approx(1.0)


# ------------------------------------------------------------------ ratio column


@pytest.mark.parametrize("ours,peers,expected", [
    (100.0, {"flashmla": 150.0, "flashinfer": 120.0}, (1.2, "flashinfer")),
    (200.0, {"flashmla": 100.0}, (0.5, "flashmla")),
    (100.0, {"flashmla": None, "flashinfer": 80.0}, (0.8, "flashinfer")),
    (100.0, {"flashmla": None}, (None, None)),
    (100.0, {}, (None, None)),
    (None, {"flashmla": 100.0}, (None, None)),
])
def test_speed_ratio_is_best_peer_time_over_ours(ours, peers, expected):
    ratio, best = B.speed_ratio(ours, peers)
    assert best == expected[1]
    assert ratio == (None if expected[0] is None else pytest.approx(expected[0]))


def test_finish_row_ignores_peers_that_were_not_timed():
    c = B.NAMED_CASES["b8_h16_s8192"]
    row = B.case_row(c, CEILINGS)
    row["impls"]["mla_cupy"] = B.timed_entry(c, CEILINGS, us=40.0, best_us=39.0, ahead=True,
                                             eager_us=50.0, host_us=20.0, max_err=1e-3)
    row["impls"]["flashmla"] = dict(status="n/a", reason="x")
    row["impls"]["flashinfer"] = B.timed_entry(c, CEILINGS, us=44.0, best_us=43.0, ahead=True,
                                               eager_us=60.0, host_us=30.0, max_err=1e-3)
    B.finish_row(row)
    assert row["ratio"] == pytest.approx(1.1) and row["best_peer"] == "flashinfer"
    line = B.format_row(row, ["flashmla", "flashinfer"])
    assert "x1.10 vs flashinfer" in line and "n/a (x)" in line and "40.0 us" in line


# ------------------------------------------------------------------ JSON schema


def test_report_json_schema_round_trips():
    report = B.new_report(gpu="NVIDIA H200", commit="abc1234", command=["mla-cupy", "bench"],
                          ceilings=CEILINGS, repeats=30)
    c = B.NAMED_CASES["b32_h128_s4096"]
    row = B.case_row(c, CEILINGS)
    row["impls"]["mla_cupy"] = B.timed_entry(c, CEILINGS, us=80.0, best_us=79.0, ahead=True,
                                             eager_us=90.0, host_us=25.0, max_err=2e-3,
                                             num_partitions=2, first_call_s=1.5)
    row["impls"]["flashmla"] = dict(status="wrong", reason="sequence 3: ...")
    B.finish_row(row)
    report["rows"].append(row)
    back = json.loads(json.dumps(report))
    assert set(back) == {"schema", "date", "gpu", "commit", "command", "ceilings", "repeats", "environment",
                         "rows"}
    assert back["schema"] == B.SCHEMA_VERSION and re.match(r"\d{4}-\d\d-\d\dT", back["date"])
    (r,) = back["rows"]
    assert set(r) >= {"case", "shape", "flops", "bytes", "floor_us", "impls", "ratio", "best_peer"}
    assert r["shape"]["batch_size"] == 32 and r["ratio"] is None
    ours = r["impls"]["mla_cupy"]
    assert set(ours) >= {"status", "us", "best_us", "ahead", "eager_us", "host_us", "tb_s", "tflop_s",
                         "roofline_pct", "max_err", "num_partitions", "first_call_s"}
    assert ours["roofline_pct"] == pytest.approx(100 * r["floor_us"] / 80.0)


def test_the_report_records_the_versions_and_clocks_a_time_depends_on(monkeypatch):
    """environment_of: CuPy, NVRTC, driver and runtime versions, the SMs and clocks from
    the device properties, and each peer's distribution version (None where it is not
    installed)."""
    import types
    from importlib import metadata
    rt = types.SimpleNamespace(driverGetVersion=lambda: 13000, runtimeGetVersion=lambda: 13020)
    cupy = types.SimpleNamespace(__version__="14.2.0", cuda=types.SimpleNamespace(
        runtime=rt, nvrtc=types.SimpleNamespace(getVersion=lambda: (13, 0))))
    props = dict(multiProcessorCount=132, clockRate=1980000, memoryClockRate=3201000)
    installed = {"sgl-flash-mla": "1.0.0"}

    def version(dist):
        if dist not in installed:
            raise metadata.PackageNotFoundError(dist)
        return installed[dist]
    monkeypatch.setattr(metadata, "version", version)
    env = B.environment_of(cupy, props, [P.FlashMLA(), P.FlashInfer()])
    assert env == dict(cupy="14.2.0", nvrtc="13.0", driver=13000, runtime=13020, sm_count=132,
                       sm_clock_mhz=1980, memory_clock_mhz=3201, peer_flashmla="1.0.0", peer_flashinfer=None)
    report = B.new_report(gpu="g", commit="c", command=[], ceilings=CEILINGS, repeats=20, environment=env)
    assert json.loads(json.dumps(report))["environment"] == env
    # CUDA 13's device properties have no clock fields
    env13 = B.environment_of(cupy, dict(multiProcessorCount=132), [])
    assert env13["sm_clock_mhz"] is None and env13["memory_clock_mhz"] is None and env13["sm_count"] == 132


def test_plot_without_matplotlib_says_so(monkeypatch, tmp_path, capsys):
    monkeypatch.setitem(sys.modules, "matplotlib", None)
    report = B.new_report(gpu="g", commit="c", command=[], ceilings=CEILINGS, repeats=30)
    assert B.plot(report, str(tmp_path / "r.png")) is False
    assert "matplotlib is not importable" in capsys.readouterr().err
    assert not (tmp_path / "r.png").exists()


# ------------------------------------------------------------------ peers


@pytest.mark.parametrize("name", sorted(P.PEERS))
def test_peer_that_cannot_be_imported_is_na_with_the_reason(monkeypatch, name):
    peer = type(P.PEERS[name])()

    def fail(mod):
        raise ImportError(f"No module named '{mod}'")
    monkeypatch.setattr(P.importlib, "import_module", fail)
    monkeypatch.setattr(peer, "_prepare_env", lambda: None)
    reason = peer.available()
    assert reason.startswith(f"{peer.module} not importable: No module named")
    assert peer.available() == reason


@pytest.mark.parametrize("peer,case,reason", [
    ("flashmla", "sparse_ds_mla_b128_sq1_h16", "h_q 64 or 128"),
    ("flashmla", "sparse_ds_mla_b128_sq1_h128", None),
    ("flashmla", "b128_h16_s8192", None),
    ("flashinfer", "sparse_ds_mla_b128_sq1_h128", "sparse"),
    ("flashinfer", "b128_sq2_h128_varlen_causal", None),
])
def test_peer_support_table(peer, case, reason):
    got = P.PEERS[peer].unsupported(B.NAMED_CASES[case])
    assert (got is None) if reason is None else (reason in got), got


@pytest.mark.parametrize("change,peer,reason", [
    (dict(page_size=16), "flashmla", "page_size 64"),
    (dict(sink=True), "flashmla", "sink"),
    (dict(sink=True), "flashinfer", "sink"),
    (dict(layout="fp8"), "flashmla", "bf16/fp16"),
    (dict(layout="fp8_ds_mla"), "flashinfer", "bf16/fp16"),
])
def test_peer_unsupported_features(change, peer, reason):
    case = dataclasses.replace(B.NAMED_CASES["b8_h16_s8192"], **change)
    assert reason in P.PEERS[peer].unsupported(case)


# ------------------------------------------------------------------ arguments


def test_default_is_the_default_suite_and_names_add_cases():
    assert B.resolve_cases(parse()) == B.SUITES["default"]
    assert [c.name for c in B.resolve_cases(parse("b8_h16_s8192"))] == ["b8_h16_s8192"]
    got = B.resolve_cases(parse("b8_h16_s8192", "--suite", "sparse"))
    assert got == [B.NAMED_CASES["b8_h16_s8192"]] + B.SUITES["sparse"]


def test_custom_shape_counts_keys_as_cache_len_plus_q_len():
    (c,) = B.resolve_cases(parse("--batch-size", 4, "--num-heads", 32, "--q-len", 2, "--cache-len", 1000,
                                 "--page-size", 16, "--layout", "fp16", "--mask", "null", "--sink"))
    assert (c.batch_size, c.num_heads, c.q_len, c.num_keys, c.page_size) == (4, 32, 2, 1002, 16)
    assert (c.layout, c.mask, c.sink, c.sparse) == ("fp16", "null", True, False)
    assert c.name.startswith("custom_b4_h32_sq2_c1000_p16")


@pytest.mark.parametrize("argv,message", [
    (("nope",), "CASE: expected a named case"),
    (("--peer", "flashattn"), "--peer: expected one of"),
    (("--repeats", 5), "--repeats: expected an int >= 20"),
    (("--check-seqs", 0), "--check-seqs: expected an int >= 1"),
    (("--batch-size", 8, "--num-heads", 16), "missing --cache-len"),
    (("--batch-size", 8, "--num-heads", 200, "--cache-len", 10), "num_heads: expected an int in [1, 128]"),
    (("--batch-size", 8, "--num-heads", 16, "--cache-len", -1), "--cache-len: expected an int >= 0"),
    (("--batch-size", 8, "--num-heads", 16, "--cache-len", 10, "--fold"), "fold: fold_shared_index needs a sparse"),
])
def test_argument_errors_are_one_line_and_exit_2(argv, message, capsys):
    assert B.main(parse(*argv)) == 2
    err = capsys.readouterr().err.strip().splitlines()
    assert len(err) == 1 and err[0].startswith("mla-cupy bench: error: ") and message in err[0], err


@pytest.mark.parametrize("argv", [("--layout", "fp9"), ("--mask", "window"), ("--repeats", "x")])
def test_argparse_rejects_bad_choices(argv, capsys):
    with pytest.raises(SystemExit) as e:
        parse(*argv)
    assert e.value.code == 2 and argv[0] in capsys.readouterr().err


def test_list_prints_every_named_case_without_a_gpu(capsys):
    assert B.main(parse("--list")) == 0
    out = capsys.readouterr().out
    for name in B.NAMED_CASES:
        assert re.search(rf"^{name}\s", out, re.M), name


# ------------------------------------------------------------------ the check (host arrays)


SMALL_CASES = [
    B.BenchCase("dense_varlen", 5, 8, 2, 300, page_size=16, lengths="normal"),
    B.BenchCase("dense_fp16_null_sink", 3, 4, 3, 90, page_size=32, layout="fp16", mask="null", sink=True),
    B.BenchCase("dense_fp8_page1", 3, 16, 1, 200, page_size=1, layout="fp8"),
    B.BenchCase("sparse_ds_mla", 3, 4, 2, 500, layout="fp8_ds_mla", mask="null", sparse_topk=64, sink=True),
    B.BenchCase("sparse_short", 3, 4, 1, 40, page_size=16, mask="null", sparse_topk=64, lengths="normal"),
    B.BenchCase("sparse_fp8", 3, 4, 1, 300, page_size=16, layout="fp8", mask="null", sparse_topk=64, sink=True),
    B.BenchCase("sparse_fold", 3, 8, 3, 400, layout="fp8_ds_mla", mask="null", sparse_topk=64, fold=True),
]


def _full_reference(case, inputs):
    kw = dict(sparse_mla=True, d_indices=inputs.d_indices, fold_shared_index=case.fold) if case.sparse else {}
    return mla_decode_reference(inputs.q, inputs.offsets, inputs.kv, 0, inputs.scale, mask_str=case.mask,
                                attn_sink_ptr=inputs.sink, **kw)


@pytest.mark.parametrize("case", SMALL_CASES, ids=lambda c: c.name)
def test_sub_batch_check_accepts_the_full_batch_result_and_rejects_a_wrong_row(case):
    seed = int(np.random.SeedSequence().entropy % 2**31)
    case = dataclasses.replace(case, seed=seed)
    inputs = B.build_inputs(case, np)
    out, lse = _full_reference(case, inputs)
    picked = B.check_sequences(case, inputs.key_counts, 3)
    expected = B.reference_rows(case, inputs, picked)
    ok, err, msg = B.compare_rows(case, picked, expected, out, lse)
    assert ok and err < 1e-6, f"seed {seed}: {msg}"
    rng = np.random.default_rng(seed)
    bad = out.copy()
    b = int(rng.choice(picked))
    bad[b * case.q_len + int(rng.integers(case.q_len)), int(rng.integers(case.num_heads)), 7] += 0.3
    ok, _, msg = B.compare_rows(case, picked, expected, bad, None)
    assert not ok and f"sequence {b}" in msg, f"seed {seed}: {msg}"


def test_inputs_follow_the_case():
    seed = int(np.random.SeedSequence().entropy % 2**31)
    case = dataclasses.replace(SMALL_CASES[3], seed=seed)
    inputs = B.build_inputs(case, np)
    kv, counts = inputs.kv, inputs.key_counts
    assert inputs.q.shape == (case.num_tokens, case.num_heads, 576)
    assert kv.blocks.shape[1:] == (1, case.page_size, 656) and str(kv.layout.value) == "fp8_ds_mla"
    assert np.array_equal(kv.cache_lengths, counts - case.q_len)
    pages = -(-counts // case.page_size)
    used = np.concatenate([kv.lookup_table[b, :pages[b]] for b in range(case.batch_size)])
    assert sorted(used) == list(range(kv.blocks.shape[0])), f"seed {seed}: every block once"
    rows = inputs.d_indices
    assert rows.shape == (case.num_tokens, case.sparse_topk)
    for t, row in enumerate(rows):
        b = t // case.q_len
        page_ids = kv.lookup_table[b, :pages[b]]
        assert len(set(row.tolist())) == len(row), f"seed {seed}: distinct indices"
        assert np.isin(row // case.page_size, page_ids).all(), f"seed {seed}: rows of its own sequence"
    assert case.key_counts().max() <= 1000 and inputs.sink.shape == (case.num_heads,)


def test_short_sequences_pad_sparse_indices_with_minus_one():
    case = B.BenchCase("s", 2, 4, 1, 10, page_size=4, mask="null", sparse_topk=16)
    rows = B.build_inputs(case, np).d_indices
    assert ((rows == -1).sum(axis=1) == 16 - 10).all()


# ------------------------------------------------------------------ one case, end to end on the host


def test_every_timing_starts_on_a_gpu_kept_busy_for_the_same_while():
    """Timer.gpu_us warms the GPU (WARM_MS of flushes, then a sync) before anything it
    times, so each implementation starts on clocks that have ramped alike."""
    calls = []

    class Stop(Exception):
        pass

    timer = object.__new__(B.Timer)
    timer.cupy = None
    timer.flush = lambda: calls.append("flush")
    timer.sync = lambda: calls.append("sync")

    def eager_us(fn, n):
        calls.append("timed")
        raise Stop
    timer.eager_us = eager_us
    with pytest.raises(Stop):
        timer.gpu_us(lambda: None, 20)
    flushes = int(B.WARM_MS * 1e-3 * B.FLUSH_PER_S)
    assert flushes >= 100
    assert calls == ["flush"] * flushes + ["sync", "timed"]


class FakeTimer:
    def __init__(self):
        self.timed = []

    def sync(self):
        pass

    def gpu_us(self, fn, repeats):
        fn()
        self.timed.append(fn)
        return 100.0, 95.0, True

    def eager_us(self, fn, calls):
        return 120.0, 30.0


class FakePeer:
    name = "fake"

    def __init__(self, available=None, unsupported=None, result=None):
        self._a, self._u, self._r = available, unsupported, result

    def available(self):
        return self._a

    def unsupported(self, case):
        return self._u

    def prepare(self, case, inputs):
        return (lambda: None), self._r, {}


@pytest.mark.parametrize("wrong", [False, True])
def test_bench_case_checks_before_timing(monkeypatch, wrong):
    case = SMALL_CASES[0]
    inputs = B.build_inputs(case, np)
    out, lse = _full_reference(case, inputs)
    if wrong:
        out = out.copy()
        out[case.num_tokens - 1] += 1.0          # the last sequence is always checked
    monkeypatch.setattr(B, "build_inputs", lambda c: inputs)
    monkeypatch.setattr(B, "ours", lambda c, i, schedule=True: ((lambda: None), (lambda: (out, lse)),
                                                 dict(num_partitions=3)))
    peers = [FakePeer(available="fake not importable: no"),
             FakePeer(result=lambda: (_full_reference(case, inputs)[0], None))]
    peers[1].name = "fake2"
    timer = FakeTimer()
    row = B.case_row(case, CEILINGS)
    args = parse("--check-seqs", 3)
    B.bench_case(case, row, peers, timer, CEILINGS, args)
    B.finish_row(row)
    ours = row["impls"]["mla_cupy"]
    assert row["impls"]["fake"] == dict(status="n/a", reason="fake not importable: no")
    assert row["impls"]["fake2"]["status"] == "ok"
    if wrong:
        assert ours["status"] == "wrong" and f"sequence {case.batch_size - 1}" in ours["reason"]
        assert len(timer.timed) == 1 and row["ratio"] is None        # only the peer was timed
    else:
        assert ours["status"] == "ok" and ours["num_partitions"] == 3 and ours["us"] == 100.0
        assert ours["eager_us"] == 120.0 and ours["host_us"] == 30.0 and ours["ahead"]
        assert len(timer.timed) == 2 and row["ratio"] == pytest.approx(1.0)
    assert row["check"]["sequences"] == B.check_sequences(case, inputs.key_counts, 3)


def test_batch_invariant_is_timed_as_its_own_entry_and_is_no_peer(monkeypatch):
    case = SMALL_CASES[0]
    inputs = B.build_inputs(case, np)
    out, lse = _full_reference(case, inputs)
    seen = []

    def fake_ours(c, i, batch_invariant=False, schedule=True):
        seen.append((batch_invariant, schedule))
        return (lambda: None), (lambda: (out, lse)), dict(num_partitions=16 if batch_invariant else 3)
    monkeypatch.setattr(B, "build_inputs", lambda c: inputs)
    monkeypatch.setattr(B, "ours", fake_ours)
    row = B.case_row(case, CEILINGS)
    args = parse("--batch-invariant")
    B.bench_case(case, row, [], FakeTimer(), CEILINGS, args)
    B.finish_row(row)
    assert seen == [(False, True), (True, True)]
    bi = row["impls"][B.BATCH_INVARIANT_IMPL]
    assert bi["status"] == "ok" and bi["num_partitions"] == 16
    assert row["ratio"] is None     # not a peer
    assert f"| {B.BATCH_INVARIANT_IMPL} " in B.format_row(row, [B.BATCH_INVARIANT_IMPL])
    assert not parse().batch_invariant
    # --schedule: the step's shared DecodeSchedule (default), each call's own, or both rows
    for flag, want in (("call", [(False, False)]), ("both", [(False, True), (False, False)])):
        seen.clear()
        row = B.case_row(case, CEILINGS)
        B.bench_case(case, row, [], FakeTimer(), CEILINGS, parse("--schedule", flag))
        assert seen == want and (B.SCHEDULE_PER_CALL_IMPL in row["impls"]) == (flag == "both")


# ------------------------------------------------------------------ GPU


@pytest.mark.gpu
def test_small_custom_case_runs_checked_and_timed_on_the_gpu(tmp_path):
    path = tmp_path / "bench.json"
    args = parse("--batch-size", 4, "--num-heads", 16, "--q-len", 2, "--cache-len", 3000,
                 "--lengths", "normal", "--repeats", 20, "--eager-calls", 5, "--json", path)
    assert B.main(args) == 0
    report = json.loads(path.read_text())
    (row,) = report["rows"]
    ours = row["impls"]["mla_cupy"]
    assert ours["status"] == "ok", ours
    assert 0 < ours["best_us"] <= ours["us"] and ours["max_err"] < 1e-1
    assert report["ceilings"]["copy_tb_s"] > 0.1 and ours["roofline_pct"] > 0


def test_peer_that_raises_is_na_and_the_run_goes_on(monkeypatch):
    case = SMALL_CASES[1]
    inputs = B.build_inputs(case, np)
    out, lse = _full_reference(case, inputs)
    monkeypatch.setattr(B, "build_inputs", lambda c: inputs)
    monkeypatch.setattr(B, "ours", lambda c, i, schedule=True: ((lambda: None), (lambda: (out, lse)), {}))

    class Raising(FakePeer):
        name = "raising"

        def prepare(self, case, inputs):
            raise RuntimeError("Only head_size_v == 512 is supported\nmore")
    row = B.case_row(case, CEILINGS)
    B.bench_case(case, row, [Raising()], FakeTimer(), CEILINGS, parse())
    assert row["impls"]["raising"] == dict(status="n/a",
                                           reason="RuntimeError: Only head_size_v == 512 is supported")
    assert row["impls"]["mla_cupy"]["status"] == "ok"


# ---- tools/kernel_times.py: ncu's CSV, summarised per kernel ----

def _tool(name):
    import importlib.util
    import os
    path = os.path.join(os.path.dirname(os.path.dirname(os.path.abspath(__file__))), "tools", f"{name}.py")
    spec = importlib.util.spec_from_file_location(name, path)
    module = importlib.util.module_from_spec(spec)
    spec.loader.exec_module(module)
    return module


def _kernel_times():
    return _tool("kernel_times")


NCU_CSV = '''==PROF== Connected to process 1082
"ID","Process ID","Process Name","Host Name","Kernel Name","Context","Stream","Block Size","Grid Size","Device","CC","Section Name","Metric Name","Metric Unit","Metric Value"
"0","1082","python3.12","127.0.0.1","mla_decode_bf16_causal_dense_fold0_m16_hopper_narrow(long long, int)","1","7","(256, 1, 1)","(1, 132, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","nsecond","181,200"
"1","1082","python3.12","127.0.0.1","mla_combine_bf16(long long)","1","7","(256, 1, 1)","(16, 64, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","usecond","7.10"
"2","1082","python3.12","127.0.0.1","mla_decode_bf16_causal_dense_fold0_m16_hopper_narrow(long long, int)","1","7","(256, 1, 1)","(1, 132, 1)","0","9.0","Command line profiler metrics","gpu__time_duration.sum","msecond","0.1796"
==PROF== Disconnected from process 1082
'''


def test_kernel_times_reads_ncu_csv_in_any_time_unit():
    kt = _kernel_times()
    times = kt.summarise(NCU_CSV)
    decode = "mla_decode_bf16_causal_dense_fold0_m16_hopper_narrow"
    assert sorted(times) == ["mla_combine_bf16", decode]
    assert times[decode] == pytest.approx([181.2, 179.6])
    assert times["mla_combine_bf16"] == pytest.approx([7.1])
    line = kt.format_summary("ds_h16_sq1_ragged", times)[0]
    assert "n=  2" in line and "median    180.4 us" in line and "best    179.6" in line
    assert kt.summarise("no profile\n") == {}


def test_kernel_times_refuses_an_unknown_unit_and_case():
    kt = _kernel_times()
    with pytest.raises(ValueError, match="unit"):
        kt.summarise(NCU_CSV.replace('"usecond"', '"cycle"'))
    with pytest.raises(ValueError, match="CASE"):
        kt.main(["no_such_case"])
    with pytest.raises(ValueError, match="--peer: expected one of"):
        kt.main(["b8_h16_s8192", "--peer", "no_such_peer"])


# ---- tools/ncu_hotspots.py: the source page's stall samples, by reason, opcode, instruction ----

HOTSPOTS_CSV = '''"Kernel Name","mla_decode_bf16_causal_dense_fold0_m32_hopper_narrow",
"Address","Source","Warp Stall Sampling (All Samples)","Instructions Executed","stall_barrier","stall_wait","stall_long_sb","stall_wait (Not Issued)"
"0x7f0000000000","R2UR UR12, R108","30","100","0","30","0","30"
"0x7f0000000010","HGMMA.64x16x16.F32.BF16 R88, gdesc[UR12], R88","50","100","0","40","10","40"
"0x7f0000000020","WARPGROUP.DEPBAR.LE gsb0, 0x0","100","100","100","0","0","0"
"0x7f0000000030","@!P0 BRA 0x7f0000000000","20","100","0","0","20","0"
"0x7f0000000040","R2UR UR13, R109","0","100","0","0","0","0"
'''


def test_ncu_hotspots_sums_by_reason_opcode_and_instruction(capsys):
    hs = _tool("ncu_hotspots")
    assert hs.opcode("@!P0 BRA 0x10") == "BRA"
    assert hs.opcode("HGMMA.64x16x16.F32.BF16 R88, gdesc[UR12], R88") == "HGMMA"
    hs.report(HOTSPOTS_CSV, top=2)
    out = capsys.readouterr().out.splitlines()
    assert out[0] == "5 SASS instructions, 200 samples (Warp Stall Sampling (All Samples))"
    # reasons over every instruction; the "(Not Issued)" columns are not counted twice
    assert out[1] == "by reason: barrier 50%, wait 35%, long_sb 15%"
    assert out[2] == "by opcode: WARPGROUP 50.0% (1), HGMMA 25.0% (1), R2UR 15.0% (2), BRA 10.0% (1)"
    assert out[3].split()[:2] == ["20", "50.0%"] and "DEPBAR" in out[3] and "barrier 100" in out[3]
    assert out[4].split()[:2] == ["10", "25.0%"] and "HGMMA" in out[4] and "wait 40, long_sb 10" in out[4]
    assert len(out) == 5


def test_ncu_hotspots_refuses_an_unknown_case_and_peer_before_ncu():
    hs = _tool("ncu_hotspots")
    with pytest.raises(ValueError, match="CASE: expected a named case"):
        hs.main(["no_such_case", "seesaw"])
    with pytest.raises(ValueError, match="--peer: expected one of"):
        hs.main(["b8_h16_s8192", "splitkv", "--peer", "no_such_peer"])


# ---- tools/hopper_check.py: a crashing case named, and replayed alone ----

def _fake_checks(monkeypatch, crash_at=None):
    """testing.check_case replaced (no GPU): records each case's description, passes,
    and raises at call number `crash_at`."""
    from mla_cupy import testing
    seen = []

    class Ok:
        ok, message = True, "fake"

    def fake(case, num_partitions=None, **kw):
        seen.append((case.describe(), num_partitions))
        if len(seen) == crash_at:
            raise RuntimeError("misaligned address (fake)")
        return (Ok(),)
    monkeypatch.setattr(testing, "check_case", fake)
    return seen


def test_hopper_check_names_a_crashing_case_and_replays_it_alone(monkeypatch, capsys):
    hc = _tool("hopper_check")
    monkeypatch.setenv("MLA_CUPY_SEED", "2206398199")
    # the tool sets these two for its process: restored after the test
    monkeypatch.setenv("MLA_CUPY_BACKEND", "hopper")
    monkeypatch.setenv("MLA_CUPY_HOPPER_SCHEDULE", "seesaw")
    seen = _fake_checks(monkeypatch, crash_at=4)       # case 1's first launch (3 a case)
    with pytest.raises(RuntimeError, match="misaligned"):
        hc.main(["--schedule", "seesaw"])
    crash = [line for line in capsys.readouterr().err.splitlines() if line.startswith("CRASH")]
    assert crash == [f"CRASH case 1 P=None {seen[3][0]}: RuntimeError: misaligned address (fake)"]
    # every case drawn as in the full run, only the named one checked
    full = _fake_checks(monkeypatch)
    assert hc.main(["--schedule", "seesaw"]) == 0
    alone = _fake_checks(monkeypatch)
    assert hc.main(["--schedule", "seesaw", "--case", "20"]) == 0
    assert alone == full[60:63] and len({d for d, _ in alone}) == 1 and "H=1 " in alone[0][0]


# ---- tools/ncu_compare.py: raw pages of ours and a peer's, side by side ----

RAW_CSV = '''"ID","Process ID","Kernel Name","gpu__time_duration.sum","smsp__inst_executed.sum","smsp__average_warps_issue_stalled_barrier_per_issue_active.ratio","dram__bytes_read.sum"
"","","","usecond","inst","ratio","Gbyte"
"0","10","mla_decode_bf16_causal_dense_fold0_hopper_seesaw(long long)","539.90","1,000","1.75","1.2"
"1","10","mla_combine_bf16(long long)","12.00","10","0.10","0.01"
'''


def test_ncu_compare_tables_kernels_of_both_sides_by_metric():
    nc = _tool("ncu_compare")
    ours = nc.read_raw(RAW_CSV)
    assert [nc.short_name(k) for k in ours] == ["mla_decode_bf16_causal_dense_fold0_hopper_seesaw",
                                                "mla_combine_bf16"]
    peer = nc.read_raw(RAW_CSV.replace("mla_decode_bf16_causal_dense_fold0_hopper_seesaw", "void flash::splitkv")
                       .replace('"539.90"', '"430.40"'))
    lines = nc.side_by_side("ours", ours, "flashmla", peer)
    assert lines[0].startswith("kernels: [0] ours:mla_decode") and "[2] flashmla:flash::splitkv" in lines[0]
    time_line = next(line for line in lines if line.startswith("gpu__time_duration.sum"))
    assert time_line.split()[1:] == ["539.90", "12.00", "430.40", "12.00"]
    assert any(line.startswith("stall barrier") for line in lines)
    assert nc.read_raw("no profile\n") == []


def test_ncu_compare_refuses_an_unknown_case_and_peer():
    nc = _tool("ncu_compare")
    with pytest.raises(ValueError, match="CASE: expected a named case"):
        nc.main(["no_such_case", "--peer", "flashmla"])
    with pytest.raises(ValueError, match="--peer: expected one of"):
        nc.main(["b8_h16_s8192", "--peer", "no_such_peer"])


# ---- tools/producer_ceiling.py: the ablated kernel sources (also ncu_hotspots.py --ablate) ----

@pytest.mark.parametrize("name, ablations", [
    ("mla_decode_fp8_ds_mla_null_sparse_fold0_hopper", ["noscale", "noconvert", "nocopy", "nostore",
                                                        "nocopy+noconvert+nostore"]),
    ("mla_decode_fp8_causal_dense_fold0_hopper", ["noconvert", "nostore"]),
    ("mla_decode_bf16_causal_dense_fold0_hopper", ["nokeys"]),
    ("mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair", ["noscale", "noconvert", "noload", "noload+noconvert",
                                                             "nopeer", "noload+noconvert+nopeer"]),
])
def test_every_ablation_edits_the_kernel_it_names(name, ablations):
    """Each edit is found exactly once in the rendered kernel (ablated_source checks it),
    changes the source, and 'strip' empties both wgmma helpers; the pair's noload is the
    pair's alone (the ring has no register loads)."""
    from mla_cupy.render import render
    from mla_cupy.variants import parse
    pc = _tool("producer_ceiling")
    source = render(parse(name))
    key = (name,)
    stripped = pc.transformed_source(key, "strip")
    assert stripped.count("{ return;") == 2 and stripped != source
    for spec in ablations:
        for prefix, keep in (("", True), ("strip+", False)):
            assert pc.parse_ablation(prefix + spec) == (spec, keep)
            assert pc.transformed_source(key, prefix + spec) not in (source, stripped)
    with pytest.raises(ValueError, match="bogus"):
        pc.parse_ablation("strip+bogus")
    if not name.endswith("_pair"):
        for pair_only in ("noload", "nopeer"):
            with pytest.raises(ValueError, match=pair_only):
                pc.transformed_source(key, pair_only)


# ---- tools/gather_ceiling.py: its two read kernels compile for sm_90a (NVRTC, no GPU) ----

def test_gather_ceiling_kernels_compile():
    """The plain-read and bulk-copy kernels that measure what DRAM gives a sparse case's
    gathers compile (NVRTC, sm_90a), and the bulk one keeps the narrow kernel's ring of
    four 64-row tiles."""
    from cupy.cuda import nvrtc
    gc = _tool("gather_ceiling")
    assert gc.STAGES == 4
    prog = nvrtc.createProgram(gc._SRC, "gather_ceiling.cu", [], [])
    try:
        nvrtc.compileProgram(prog, ["-arch=sm_90a", "-std=c++17"])
        ptx = nvrtc.getPTX(prog).decode(errors="replace")
    finally:
        nvrtc.destroyProgram(prog)
    assert ".entry read_rows" in ptx and ".entry bulk_rows" in ptx
    assert "cp.async.bulk.shared::cluster.global.mbarrier::complete_tx::bytes" in ptx
