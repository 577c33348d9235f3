"""compute-sanitizer over every variant family: memcheck, racecheck, initcheck.

Runs tools/sanitize_cases.py (one small poisoned, adversarial case per family:
layout x mask x dense/sparse x fold, D_qk 512, e4m3 queries, the three portable
tiles, the Hopper kernels on sm_90, the combine, the checked mode's kernel)
once under each tool and prints one summary line per tool:

    memcheck: 49 variants, 0 errors
    racecheck: 49 variants, 0 errors (0 warnings)
    initcheck: 49 variants, 0 errors

Usage (GPU machine, repository root; logs in $OUT or --log-dir):
    python3 tools/sanitize_all.py [--quick] [--tools memcheck,racecheck] [--only SUBSTRING]
--quick runs six families (every kernel family still reached) at one split
count: a few minutes for all three tools on an H200.  Exit status 1 when a tool
reports an error or a case fails its reference check.
"""
from __future__ import annotations

import argparse
import os
import re
import subprocess
import sys
import time

TOOLS = ("memcheck", "racecheck", "initcheck")
HERE = os.path.dirname(os.path.abspath(__file__))
REPO = os.path.dirname(HERE)
_ERRORS = re.compile(r"ERROR SUMMARY: (\d+) errors?")
_RACES = re.compile(r"RACECHECK SUMMARY: (\d+) hazards? displayed \((\d+) errors?, (\d+) warnings?\)")
_VARIANT = re.compile(r"^variant (\S+)$", re.M)
_CASES = re.compile(r"^sanitize cases: (\d+) variants, (\d+) failures$", re.M)


def summarize(tool: str, log: str, returncode: int) -> tuple[str, bool]:
    """The summary line of one tool's log, and whether the run is clean."""
    variants = len(set(_VARIANT.findall(log)))
    done = _CASES.search(log)
    failures = int(done.group(2)) if done else None
    if tool == "racecheck":
        m = _RACES.search(log) or _ERRORS.search(log)
        errors = int(m.group(2) if m and m.re is _RACES else (m.group(1) if m else -1))
        warnings = f" ({m.group(3)} warnings)" if m and m.re is _RACES else ""
    else:
        m = _ERRORS.search(log)
        errors, warnings = (int(m.group(1)) if m else -1), ""
    line = f"{tool}: {variants} variants, " + (f"{errors} errors{warnings}" if errors >= 0
                                                 else "no summary from compute-sanitizer")
    if failures is None:
        line += f"; the cases did not finish (exit {returncode})"
    elif failures:
        line += f"; {failures} cases FAILED their reference check"
    return line, errors == 0 and failures == 0


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--quick", action="store_true", help="six families, one split count")
    ap.add_argument("--tools", default=",".join(TOOLS), help=f"comma-separated subset of {TOOLS}")
    ap.add_argument("--only", default="", help="families whose name contains this")
    ap.add_argument("--log-dir", default=os.environ.get("OUT") or "/tmp/mla_sanitize")
    ap.add_argument("--sanitizer", default="compute-sanitizer")
    args = ap.parse_args(argv)
    tools = [t for t in args.tools.split(",") if t]
    bad = [t for t in tools if t not in TOOLS]
    if bad:
        ap.error(f"--tools: expected names from {TOOLS}, got {bad}")
    os.makedirs(args.log_dir, exist_ok=True)
    env = dict(os.environ, PYTHONPATH=os.pathsep.join(filter(None, [REPO, os.environ.get("PYTHONPATH")])),
               PYTHONUNBUFFERED="1")
    clean = True
    for tool in tools:
        cmd = [args.sanitizer, "--tool", tool, "--print-limit", "20"]
        if tool == "racecheck":
            cmd += ["--racecheck-report", "all"]
        cmd += [sys.executable, os.path.join(HERE, "sanitize_cases.py")]
        cmd += ["--quick"] if args.quick else []
        cmd += ["--only", args.only] if args.only else []
        t0 = time.monotonic()
        r = subprocess.run(cmd, cwd=REPO, env=env, capture_output=True, text=True)
        log = r.stdout + r.stderr
        path = os.path.join(args.log_dir, f"sanitize_{tool}.log")
        with open(path, "w", encoding="utf-8") as f:
            f.write(" ".join(cmd) + "\n" + log)
        line, ok = summarize(tool, log, r.returncode)
        clean &= ok
        print(f"{line}  [{time.monotonic() - t0:.0f} s, log {path}]", flush=True)
    return 0 if clean else 1


if __name__ == "__main__":
    sys.exit(main())
