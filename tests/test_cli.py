"""The ``mla-cupy`` command line, run as ``python -m mla_cupy`` in a subprocess
(no GPU needed except where marked)."""
from __future__ import annotations

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
    r = cli("compile", DECODE, "--arch", "sm_80", tmp_path=tmp_path)
    assert r.returncode == 0, r.stderr
    lines = r.stdout.splitlines()
    assert len(lines) == 1, r.stdout
    line = lines[0]
    assert line.split()[0] == DECODE and " sm_80 " in line
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


def test_compile_failure_names_variant_and_dumped_source(tmp_path):
    """SPEC §9: a failed compile carries the variant name and where the
    rendered source was written (an invalid arch makes NVRTC fail)."""
    r = cli("compile", DECODE, "--arch", "sm_1", tmp_path=tmp_path)
    line = assert_clean_error(r, "compile")
    path = tmp_path / "dumps" / f"{DECODE}.cu"
    assert DECODE in line and str(path) in line, line
    assert path.exists() and f"{DECODE}(" in path.read_text(encoding="utf-8")


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
def test_check_without_gpu_fails_cleanly():
    r = cli("check", "--seed", "1")
    assert r.returncode != 0
    assert_clean_error(r, "check", code=r.returncode)
    assert r.stdout == ""
