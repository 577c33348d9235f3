"""The ``mla-cupy`` command line, run as ``python -m mla_cupy`` in a subprocess
(no GPU needed except where marked)."""
from __future__ import annotations

import io
import os
import re
import subprocess
import sys

import pytest

from conftest import HAS_GPU
from mla_cupy.render import render
from mla_cupy.variants import all_variants, parse

REPO = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
DECODE = "mla_decode_bf16_causal_dense_fold0"
COMBINE = "mla_combine_bf16"


def cli(*args, tmp_path=None, timeout=120):
    env = dict(os.environ, PYTHONPATH=REPO)
    if tmp_path is not None:
        env["MLA_CUPY_DUMP_DIR"] = str(tmp_path / "dumps")
    return subprocess.run([sys.executable, "-m", "mla_cupy", *map(str, args)], cwd=REPO,
                          env=env, capture_output=True, text=True, timeout=timeout)


def assert_clean_error(r, cmd, code=2):
    """Exit code ``code`` and exactly one line on stderr, no traceback."""
    assert r.returncode == code, (r.returncode, r.stdout, r.stderr)
    assert "Traceback" not in r.stderr, r.stderr
    lines = r.stderr.strip().splitlines()
    assert len(lines) == 1, r.stderr
    assert lines[0].startswith(f"mla-cupy {cmd}: error: "), lines[0]
    return lines[0]


def test_list_prints_every_variant():
    r = cli("list")
    assert r.returncode == 0, r.stderr
    assert r.stdout.splitlines() == [k.name for k in all_variants()]


@pytest.mark.parametrize("name", [DECODE, COMBINE, "mla_decode_fp16_null_dense_fold0_qk512_m16"])
def test_render_prints_the_source_with_the_kernel_symbol(name):
    r = cli("render", name)
    assert r.returncode == 0, r.stderr
    assert 'extern "C"' in r.stdout
    # the kernel symbol is the variant name (what CuPy looks up)
    assert re.search(rf'extern "C"[^;{{]*\b{name}\(', r.stdout), r.stdout[:2000]
    assert r.stdout == render(parse(name))


def test_dump_writes_the_named_sources(tmp_path):
    out = tmp_path / "src"
    r = cli("dump", DECODE, COMBINE, "-o", out)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(out)) == sorted([f"{DECODE}.cu", f"{COMBINE}.cu"])
    assert r.stdout.splitlines() == [str(out / f"{DECODE}.cu"), str(out / f"{COMBINE}.cu")]
    for name in (DECODE, COMBINE):
        text = (out / f"{name}.cu").read_text(encoding="utf-8")
        assert text == render(parse(name)) and f"{name}(" in text


def test_dump_all_writes_every_variant(tmp_path):
    r = cli("dump", "--all", "-o", tmp_path)
    assert r.returncode == 0, r.stderr
    assert sorted(os.listdir(tmp_path)) == sorted(
        f"{k.name}.cu" for k in all_variants())


@pytest.mark.parametrize("args", [("dump", "-o", "{tmp}"),
                                  ("dump", "--all", DECODE, "-o", "{tmp}"),
                                  ("compile",),
                                  ("compile", "--all", DECODE)])
def test_needs_names_or_all_but_not_both(tmp_path, args):
    r = cli(*(a.format(tmp=tmp_path / "o") for a in args))
    line = assert_clean_error(r, args[0])
    assert "--all" in line
    assert not (tmp_path / "o").exists() or not os.listdir(tmp_path / "o")


def test_compile_reports_resources_without_a_gpu(tmp_path):
    r = cli("compile", f"{DECODE}_m32", "--arch", "sm_80", tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r.stdout    # fits sm_80's shared memory: no marker, no summary
    line = lines[0]
    assert line.split()[0] == f"{DECODE}_m32" and " sm_80 " in line
    regs = re.search(r"\bregs=\s*(\d+)\b", line)
    assert regs and 0 < int(regs.group(1)) <= 255, line
    assert "spill_st=0B" in line and "spill_ld=0B" in line, line


@pytest.mark.parametrize("cmd", ["render", "compile", "dump"])
@pytest.mark.parametrize("name", ["mla_decode_bogus", f"{DECODE}_m64"])
def test_unknown_or_non_canonical_name_is_a_clean_error(tmp_path, cmd, name):
    extra = ("-o", tmp_path / "o") if cmd == "dump" else ()
    r = cli(cmd, name, *extra)
    line = assert_clean_error(r, cmd)
    assert name in line
    if name.endswith("_m64"):
        assert f"did you mean '{DECODE}'" in line
    assert r.stdout == ""


def _break_render(monkeypatch, tmp_path, marker):
    """Make the compiler see a decode source with an error on one line; returns that source."""
    from mla_cupy import compiler
    monkeypatch.setenv("MLA_CUPY_DUMP_DIR", str(tmp_path / "dumps"))
    broken = render(parse(DECODE)).replace('extern "C" __global__',
                                           f'static const int broken_line = {marker};\nextern "C" __global__', 1)
    assert marker in broken
    monkeypatch.setattr(compiler, "render", lambda key: broken)
    return broken


def test_compile_failure_prints_the_whole_log_and_dumps_the_source(tmp_path, monkeypatch, capsys):
    """docs/spec.md §9: a failed compile carries the variant name, the compiler log
    (all of it: the first line says nothing) and where the source was written:
    the text NVRTC saw, so the log's line numbers point into it."""
    from mla_cupy.__main__ import main
    broken = _break_render(monkeypatch, tmp_path, "undefined_name_1")
    assert main(["compile", DECODE]) == 2
    err = capsys.readouterr().err
    dumps = tmp_path / "dumps"
    latest, kept = dumps / f"{DECODE}.cu", dumps / f"{DECODE}.1.cu"
    head = err.splitlines()[0]
    assert head.startswith("mla-cupy compile: error: ") and DECODE in head, err
    assert str(latest) in head and str(kept) in head, head
    assert "Traceback" not in err
    # the whole NVRTC log: the error, the offending line and the error count
    at = re.search(rf"{DECODE}\.cu\((\d+)\): error: identifier \"undefined_name_1\" is undefined", err)
    assert at, err
    assert "1 error detected" in err, err
    assert latest.read_text(encoding="utf-8") == broken == kept.read_text(encoding="utf-8")
    assert "undefined_name_1" in broken.splitlines()[int(at.group(1)) - 1]


def test_successive_compile_failures_keep_numbered_copies(tmp_path, monkeypatch, capsys):
    from mla_cupy.__main__ import main
    first = _break_render(monkeypatch, tmp_path, "undefined_name_1")
    assert main(["compile", DECODE]) == 2
    second = _break_render(monkeypatch, tmp_path, "undefined_name_2")
    assert main(["compile", DECODE]) == 2
    err = capsys.readouterr().err
    dumps = tmp_path / "dumps"
    assert f"kept as {dumps / f'{DECODE}.2.cu'}" in err, err
    assert sorted(os.listdir(dumps)) == sorted([f"{DECODE}.cu", f"{DECODE}.1.cu", f"{DECODE}.2.cu"])
    assert (dumps / f"{DECODE}.1.cu").read_text(encoding="utf-8") == first
    assert (dumps / f"{DECODE}.2.cu").read_text(encoding="utf-8") == second
    assert (dumps / f"{DECODE}.cu").read_text(encoding="utf-8") == second


@pytest.mark.parametrize("arch,target", [
    ("sm_90a", "sm_90a"), ("sm_90", "sm_90"), ("90", "sm_90a"), ("9.0", "sm_90a"),
    ("compute_90", "sm_90"), ("compute_90a", "sm_90a"), ("sm_100a", "sm_100a"),
    ("sm_100", "sm_100"), ("10.0", "sm_100"), ("sm_80", "sm_80"), ("8.0", "sm_80"),
    ("86", "sm_86"), ("sm_89", "sm_89"), ("12.0", "sm_120"), (" SM_90A ", "sm_90a"),
])
def test_arch_forms_are_read(arch, target):
    from mla_cupy.compiler import parse_arch
    assert parse_arch(arch) == target


@pytest.mark.parametrize("arch", ["sm_100a", "compute_90", "9.0"])
def test_compile_takes_every_arch_form(arch, capsys):
    """Compiled to a cubin whatever the form (compute_90 too), so ptxas reports resources."""
    from mla_cupy.__main__ import main
    from mla_cupy.compiler import parse_arch
    assert main(["compile", f"{DECODE}_m16", "--arch", arch]) == 0
    out = capsys.readouterr().out
    assert re.fullmatch(rf"{DECODE}_m16\s+{parse_arch(arch)}\s+regs=\s*\d+ .*\n", out), out


@pytest.mark.parametrize("arch,expected", [
    ("sm_1", "such as sm_90a"), ("hopper", "such as sm_90a"), ("", "such as sm_90a"),
    ("sm_90b", "such as sm_90a"), ("sm-90", "such as sm_90a"), ("9", "such as sm_90a"),
    ("compute_", "such as sm_90a"), ("sm_75", "from sm_80 on"), ("7.5", "from sm_80 on"),
    ("sm_91", "from sm_80 on"), ("sm_999", "from sm_80 on"), ("sm_80a", "'a' suffix"),
])
def test_bad_arch_is_a_clean_error(arch, expected, capsys):
    from mla_cupy.__main__ import main
    assert main(["compile", DECODE, "--arch", arch]) == 2
    captured = capsys.readouterr()
    lines = captured.err.strip().splitlines()
    assert len(lines) == 1 and captured.out == "", captured
    assert lines[0].startswith("mla-cupy compile: error: --arch: expected "), lines[0]
    assert expected in lines[0] and f"got {arch!r}" in lines[0], lines[0]


@pytest.mark.parametrize("arch,limit", [("sm_80", 166912), ("sm_86", 101376), ("sm_89", 101376),
                                        ("sm_90", 232448), ("sm_90a", 232448),
                                        ("sm_100", 232448), ("sm_100a", 232448)])
def test_smem_limit_per_arch(arch, limit):
    from mla_cupy.compiler import smem_limit
    assert smem_limit(arch) == limit


def test_variants_over_the_smem_limit_are_marked_and_counted(capsys):
    """sm_80 allows 163 KiB per block: the 64-row bf16 tile (188 KiB) is
    flagged, the 16-row one (93 KiB) is not, and neither fails the command."""
    from mla_cupy.__main__ import SMEM_MARKER, main
    assert main(["compile", DECODE, f"{DECODE}_m16", "--arch", "sm_80"]) == 0
    big, small, summary = capsys.readouterr().out.splitlines()
    assert big.startswith(DECODE + " ") and SMEM_MARKER in big and "166912B" in big, big
    assert small.startswith(f"{DECODE}_m16 ") and SMEM_MARKER not in small, small
    assert summary.startswith("1 of 2 compiled variant(s) need more shared memory per block "
                              "than sm_80 allows (166912 B)"), summary
    assert main(["compile", DECODE, "--arch", "sm_90a"]) == 0
    out = capsys.readouterr().out
    assert SMEM_MARKER not in out and len(out.splitlines()) == 1, out


class _Stream(io.StringIO):
    def __init__(self, tty):
        super().__init__()
        self.tty = tty

    def isatty(self):
        return self.tty


@pytest.mark.parametrize("total", [1, 9, 25, 232])
def test_progress_off_a_terminal_prints_a_line_every_tenth(total):
    from mla_cupy.__main__ import _Progress
    stream = _Stream(tty=False)
    progress = _Progress(total, stream)
    for i in range(total):
        progress.start(f"v{i}")
        progress.finish()
    lines = stream.getvalue().splitlines()
    assert "\r" not in stream.getvalue()
    assert 1 <= len(lines) <= 11, lines
    assert lines[-1].startswith(f"compile [{total}/{total}] "), lines
    done = [int(re.search(r"\[(\d+)/", line).group(1)) for line in lines]
    assert done == sorted(set(done))


def test_progress_on_a_terminal_rewrites_one_line():
    from mla_cupy.__main__ import _Progress
    stream = _Stream(tty=True)
    progress = _Progress(3, stream)
    for i in range(3):
        progress.start(f"variant_{i}")
        assert stream.getvalue().endswith(f"variant_{i}\x1b[K")
        progress.finish()
    text = stream.getvalue()
    assert "\n" not in text and text.count("\r") == 6 and text.endswith("\r\x1b[K")
    assert "[2/3]" in text


def test_compile_all_reports_progress_and_a_summary(monkeypatch, capsys):
    """compile --all, with NVRTC replaced by a stub (every variant's real
    compile is tests/test_compile.py's job): one result line per variant,
    the summary, and progress on stderr."""
    from mla_cupy import compiler
    from mla_cupy.__main__ import main
    monkeypatch.setattr(compiler, "compile_offline", lambda key, arch: compiler.Resources(
        key.name, arch, 100, 0, 0, 0, 0, 0, ""))
    assert main(["compile", "--all"]) == 0
    out, err = capsys.readouterr()
    names = [k.name for k in all_variants()]
    lines = out.splitlines()
    assert [line.split()[0] for line in lines[:-1]] == names
    assert lines[-1].startswith(f"0 of {len(names)} compiled variant(s) need more shared memory"), lines[-1]
    assert err.splitlines()[-1].startswith(f"compile [{len(names)}/{len(names)}] "), err


@pytest.mark.parametrize("args", [("list",), ("render", DECODE), ("dump", "--all", "-o", "{tmp}")])
def test_a_closed_pipe_ends_quietly(args, tmp_path):
    """`mla-cupy list | head`: the reader is gone before the first write."""
    read_end, write_end = os.pipe()
    os.close(read_end)
    try:
        r = subprocess.run([sys.executable, "-m", "mla_cupy", *(a.format(tmp=tmp_path) for a in args)],
                           cwd=REPO, env=dict(os.environ, PYTHONPATH=REPO), stdout=write_end,
                           stderr=subprocess.PIPE, text=True, timeout=120)
    finally:
        os.close(write_end)
    assert r.returncode == 1 and r.stderr == "", (r.returncode, r.stderr)


def test_no_subcommand_is_a_usage_error():
    r = cli()
    assert r.returncode == 2 and "usage: mla-cupy" in r.stderr and "Traceback" not in r.stderr


def test_info_runs_and_names_the_gpu_situation():
    r = cli("info")
    assert r.returncode == 0, r.stderr
    out = r.stdout
    for label in ("mla_cupy", "cupy", "nvrtc", "cache dir", "dump dir"):
        assert re.search(rf"^{label}\s+\S", out, re.M), out
    assert re.search(r"^nvrtc\s+\d+\.\d+", out, re.M), out
    if HAS_GPU:
        assert re.search(r"^gpu 0\s+.+ sm_\d+", out, re.M), out
    else:
        assert re.search(r"^gpu\s+none\b", out, re.M), out


@pytest.mark.skipif(HAS_GPU, reason="checks the GPU-less failure")
def test_check_without_gpu_says_so():
    r = cli("check", "--seed", "1")
    assert r.returncode != 0
    line = assert_clean_error(r, "check", code=r.returncode)
    # plain words first, CUDA's own (e.g. "driver insufficient") kept after them
    assert re.fullmatch(r"mla-cupy check: error: no CUDA GPU found; `check` runs a kernel and "
                        r"needs one \(.+\)", line), line
    assert r.stdout == ""


@pytest.mark.skipif(HAS_GPU, reason="checks the GPU-less path")
def test_demo_without_gpu_compiles_and_runs_the_reference():
    r = cli("demo", "--seed", "1")
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert lines[0].startswith("no CUDA GPU found ("), lines
    assert re.match(r"mla_decode_bf16_causal_dense_fold0_m16\s+sm_90a\s+regs=", lines[1]), lines
    assert lines[2].startswith("reference: B=8 H=16"), lines


def test_all_ones_bytes_are_nan_in_every_output_dtype():
    """What check/demo's NaN fill relies on (it fills bytes, whatever the dtype)."""
    import ml_dtypes
    import numpy as np
    for dt in (ml_dtypes.bfloat16, np.float16, np.float32):
        assert np.isnan(np.full(8 * np.dtype(dt).itemsize, 0xFF, np.uint8).view(dt)).all(), dt


@pytest.mark.gpu
def test_check_passes_on_the_gpu():
    seed = int.from_bytes(os.urandom(4), "little")
    r = cli("check", "--seed", seed)
    assert r.returncode == 0 and "\nPASS: " in r.stdout, (seed, r.stdout, r.stderr)


@pytest.mark.gpu
def test_upload_fills_the_outputs_with_nan_before_the_launch():
    import numpy as np
    from mla_cupy.__main__ import _upload
    from mla_cupy.testing import make_case
    seed = int.from_bytes(os.urandom(4), "little")
    rng = np.random.default_rng(seed)
    case = make_case(rng, seq_lens=[1, 2], cache_lens=[100, 300], sink="random")
    launch, out, lse, _ = _upload(case)
    assert np.isnan(out.get().astype(np.float32)).all() and np.isnan(lse.get()).all(), seed
    launch()
    assert not np.isnan(out.get().astype(np.float32)).any() and not np.isnan(lse.get()).any(), seed


@pytest.mark.gpu
def test_demo_reports_gpu_time_and_eager_time_separately():
    seed = int.from_bytes(os.urandom(4), "little")
    r = cli("demo", "--seed", seed)
    assert r.returncode == 0, (seed, r.stdout, r.stderr)
    gpu = re.search(r"^GPU time:\s+([\d.]+) us per call", r.stdout, re.M)
    eager = re.search(r"^eager call: ([\d.]+) us on the host until mla_decode returns, "
                      r"([\d.]+) us end to end", r.stdout, re.M)
    assert gpu and eager, (seed, r.stdout)
    gpu_us, host_us, end_us = float(gpu.group(1)), float(eager.group(1)), float(eager.group(2))
    # an eager call waits for its own GPU work on an idle GPU: never faster than the kernels
    assert 0 < gpu_us < end_us and 0 < host_us <= end_us, (seed, r.stdout)
