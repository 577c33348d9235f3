"""Compile every variant this GPU runs into CuPy's disk cache, several at a time
(one process per core): the test files' ``compiled_kernels`` fixture then loads
them instead of each compiling all of them one after another (~250 s a file on
the H200 machine).  tools/gpu_run.sh runs it first.

    PYTHONPATH=. python3 tools/warm_kernel_cache.py [--jobs N]
"""
import argparse
import multiprocessing
import os
import time


def _compile(name: str) -> str | None:
    from mla_cupy.compiler import get_kernel
    try:
        get_kernel(name)
    except Exception as e:  # noqa: BLE001 - reported by name; the tests stop on it too
        return f"{name}: {str(e).splitlines()[0] if str(e) else type(e).__name__}"
    return None


def main() -> int:
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("--jobs", type=int, default=os.cpu_count())
    args = p.parse_args()
    from mla_cupy.variants import all_variants, builds_for
    ctx = multiprocessing.get_context("spawn")
    with ctx.Pool(1) as probe:                 # the device's compute capability, outside this process
        cc = probe.apply(_compute_capability)
    names = [k.name for k in all_variants() if builds_for(k, cc)]
    t0 = time.perf_counter()
    with ctx.Pool(args.jobs) as pool:
        failures = [f for f in pool.imap_unordered(_compile, names) if f]
    print(f"warm_kernel_cache: {len(names)} variants for sm_{cc} in {time.perf_counter() - t0:.0f} s, "
          f"{len(failures)} failed")
    for f in failures:
        print("  ", f)
    return 1 if failures else 0


def _compute_capability() -> int:
    import cupy
    return int(cupy.cuda.Device().compute_capability)


if __name__ == "__main__":
    raise SystemExit(main())
