"""Cold NVRTC compile seconds and warm-cache milliseconds per decode variant.

Usage (GPU machine, from the checkout):
    PYTHONPATH=. python3 tools/compile_times.py [--family hopper|portable|all] [--match REGEX|readme] [--json FILE]

Cold: a fresh CuPy cache directory; each variant's first ``compiler.get_kernel``
in one process (render, NVRTC with ptxas, module load).  Warm: a second process
on the same cache directory, so each first ``get_kernel`` is a disk-cache hit
(render, hash of the source and options, cubin read, module load): what a
serving process pays per variant after the first run on a machine.  The
variants run in the order of ``variants.all_variants``; ``--match`` keeps those whose
name a regular expression matches (``readme``: README_MATCH, one variant a schedule and
twin; a cold run of all 169 Hopper variants takes longer than a device call).
"""
from __future__ import annotations

import argparse
import json
import os
import re
import statistics
import subprocess
import sys
import tempfile
import time

ROOT = os.path.dirname(os.path.dirname(os.path.abspath(__file__)))
# The README's subset: bf16 causal dense and fp8_ds_mla null sparse at fold 0, one variant of
# every Hopper schedule and twin
README_MATCH = r"^mla_decode_(bf16_causal_dense|fp8_ds_mla_null_sparse)_fold0_(m16_|m32_)?hopper"


def _variants(family: str, match: str | None = None):
    sys.path.insert(0, ROOT)
    from mla_cupy.variants import Backend, DecodeKey, all_variants
    keys = [k for k in all_variants() if isinstance(k, DecodeKey)]
    if family != "all":
        keys = [k for k in keys if k.backend is Backend(family)]
    if match:
        pattern = README_MATCH if match == "readme" else match
        keys = [k for k in keys if re.search(pattern, k.name)]
    return keys


def _time_phase(family: str, match: str | None) -> None:
    """Child process: time each variant's first get_kernel, one JSON line each."""
    import cupy

    from mla_cupy import compiler
    cupy.zeros(1).sum()                     # the CUDA context and CuPy's own kernels, outside the timings
    for key in _variants(family, match):
        if compiler.device_arch(0) != "sm_90a" and key.min_sm >= 90:
            continue
        t0 = time.perf_counter()
        compiler.get_kernel(key, 0)
        print(json.dumps({"name": key.name, "s": time.perf_counter() - t0}), flush=True)


def _run_phase(phase: str, family: str, cache: str, match: str | None) -> dict:
    env = dict(os.environ, CUPY_CACHE_DIR=cache, PYTHONPATH=ROOT + os.pathsep + os.environ.get("PYTHONPATH", ""))
    out = subprocess.run([sys.executable, __file__, "--child", "--family", family]
                         + (["--match", match] if match else []), env=env,
                         capture_output=True, text=True, check=True).stdout
    return {r["name"]: r["s"] for r in map(json.loads, out.splitlines())}


def main() -> int:
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("--family", choices=["hopper", "portable", "all"], default="hopper")
    ap.add_argument("--match", help="only the variants whose name this regular expression matches")
    ap.add_argument("--json", help="write {name: {cold_s, warm_ms}} here")
    ap.add_argument("--child", action="store_true", help=argparse.SUPPRESS)
    a = ap.parse_args()
    if a.child:
        _time_phase(a.family, a.match)
        return 0
    with tempfile.TemporaryDirectory(prefix="mla_cupy_cache_") as cache:
        cold = _run_phase("cold", a.family, cache, a.match)
        warm = _run_phase("warm", a.family, cache, a.match)
    rows = {n: {"cold_s": cold[n], "warm_ms": 1e3 * warm[n]} for n in cold if n in warm}
    width = max(map(len, rows), default=10)
    print(f"{'variant':<{width}}  cold s  warm ms")
    for name, r in rows.items():
        print(f"{name:<{width}}  {r['cold_s']:6.2f}  {r['warm_ms']:7.1f}")
    if rows:
        c = [r["cold_s"] for r in rows.values()]
        w = [r["warm_ms"] for r in rows.values()]
        print(f"{len(rows)} variants: cold median {statistics.median(c):.2f} s (max {max(c):.2f}), "
              f"warm median {statistics.median(w):.1f} ms (max {max(w):.1f})")
    if a.json:
        with open(a.json, "w") as f:
            json.dump(rows, f, indent=1)
    return 0


if __name__ == "__main__":
    sys.exit(main())
