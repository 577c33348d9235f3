"""The ``mla-cupy`` command line (also ``python -m mla_cupy``).

    list                      every variant name
    render NAME               CUDA source of a variant to stdout
    dump [--all | NAME...] -o DIR
    compile [--all | NAME...] [--arch sm_90a]   NVRTC without a GPU; ptxas resources
    check                     one random case on the GPU against the reference
    demo                      the main job: on a GPU, a kernel checked against the
                              reference and timed; without one, compile + reference
    info                      GPU, CuPy, NVRTC, cache directory
"""
from __future__ import annotations

import argparse
import os
import sys


def _keys(args):
    from .variants import all_variants, parse
    if args.all == bool(args.names):
        raise ValueError("expected --all or at least one variant NAME (not both)")
    return all_variants() if args.all else [parse(n) for n in args.names]


def cmd_list(args):
    from .variants import all_variants
    for key in all_variants():
        print(key.name)


def cmd_render(args):
    from .render import render
    from .variants import parse
    sys.stdout.write(render(parse(args.name)))


def cmd_dump(args):
    from .render import render
    os.makedirs(args.output, exist_ok=True)
    for key in _keys(args):
        path = os.path.join(args.output, f"{key.name}.cu")
        with open(path, "w", encoding="utf-8") as f:
            f.write(render(key))
        print(path)


def cmd_compile(args):
    from .compiler import compile_offline
    keys = _keys(args)
    failures = 0
    for i, key in enumerate(keys):
        if args.all and sys.stderr.isatty():
            sys.stderr.write(f"\r[{i + 1}/{len(keys)}] {key.name:60s}")
            sys.stderr.flush()
        min_sm = getattr(key, "min_sm", 0)
        if int(args.arch[3:5]) < min_sm:
            print(f"{key.name:48s} {args.arch:7s} skipped: needs sm_{min_sm}+", flush=True)
            continue
        res = compile_offline(key, arch=args.arch)
        if args.all and sys.stderr.isatty():
            sys.stderr.write("\r" + " " * 80 + "\r")
        print(res.line(), flush=True)
        failures += res.spill_stores > 0 or res.spill_loads > 0
    if failures:
        raise RuntimeError(f"{failures} variant(s) spill registers")


def cmd_check(args):
    import numpy as np
    from .testing import compare, make_case, reference, run_gpu
    rng = np.random.default_rng(args.seed)
    case = make_case(rng, seq_lens=rng.integers(0, 4, 4), cache_lens=rng.integers(0, 2000, 4),
                     num_heads=int(rng.choice([16, 64, 128])), page_size=int(rng.choice([1, 16, 64])),
                     mask=str(rng.choice(["null", "causal", "sliding_window_causal"])),
                     window=int(rng.integers(1, 500)), sink="random")
    out, lse = run_gpu(case)
    ref_out, ref_lse = reference(case)
    cmp = compare(out, lse, ref_out, ref_lse, dtype=case.q.dtype)
    print(f"{case.describe()}\n{'PASS' if cmp.ok else 'FAIL'}: {cmp.message}")
    if not cmp.ok:
        raise SystemExit(1)


def _has_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


def cmd_demo(args):
    import time

    import numpy as np
    from .testing import compare, make_case, reference
    rng = np.random.default_rng(args.seed)
    case = make_case(rng, seq_lens=[1] * 8, cache_lens=rng.integers(1000, 4000, 8), num_heads=16,
                     page_size=64, sink="random")
    t0 = time.perf_counter()
    ref_out, ref_lse = reference(case)
    t_ref = time.perf_counter() - t0
    if not _has_gpu():
        from .compiler import compile_offline
        res = compile_offline("mla_decode_bf16_causal_dense_fold0_m16")
        print("no GPU found: compiled the kernel with NVRTC and ran the NumPy reference only")
        print(res.line())
        print(f"reference: {case.describe()}  ({t_ref:.2f} s, |out| max {np.abs(ref_out).max():.3f})")
        return
    import cupy
    from .testing import run_gpu
    out, lse = run_gpu(case)
    cmp = compare(out, lse, ref_out, ref_lse, dtype=case.q.dtype)
    print(f"{case.describe()}\n{'PASS' if cmp.ok else 'FAIL'}: {cmp.message}")
    if not cmp.ok:
        raise SystemExit(1)
    from .dispatch import mla_decode
    q_dev, kv = cupy.asarray(case.q), case.collection(cupy)
    offs = cupy.asarray(case.input_row_offsets)
    mla_decode(q_dev, kv, offs, scale=case.scale, q_max_seq_len=1)   # warm-up
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times = []
    for _ in range(50):
        start.record()
        mla_decode(q_dev, kv, offs, scale=case.scale, q_max_seq_len=1)
        stop.record()
        stop.synchronize()
        times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3)
    print(f"time: median {np.median(times):.1f} us over 50 calls (tools/bench.py for the full table)")


def cmd_info(args):
    import cupy
    from cupy.cuda import nvrtc
    from .compiler import dump_dir
    print(f"mla_cupy  {__import__('mla_cupy').__version__}")
    print(f"cupy      {cupy.__version__}")
    print(f"nvrtc     {'.'.join(map(str, nvrtc.getVersion()))}")
    print(f"cache dir {os.environ.get('CUPY_CACHE_DIR', os.path.expanduser('~/.cupy/kernel_cache'))}")
    print(f"dump dir  {dump_dir()}")
    try:
        n = cupy.cuda.runtime.getDeviceCount()
    except cupy.cuda.runtime.CUDARuntimeError:
        n = 0
    if n == 0:
        print("gpu       none (render/compile/list work without one)")
    for i in range(n):
        p = cupy.cuda.runtime.getDeviceProperties(i)
        print(f"gpu {i}     {p['name'].decode()} sm_{p['major']}{p['minor']} "
              f"{p['multiProcessorCount']} SMs {p['totalGlobalMem'] / 2**30:.0f} GiB")


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="mla-cupy", description="MLA decode kernels: list, render, "
                                 "dump, compile, check on the GPU, info.")
    sub = ap.add_subparsers(dest="cmd", required=True)
    p = sub.add_parser("list", help="print every variant name")
    p.set_defaults(fn=cmd_list)
    p = sub.add_parser("render", help="CUDA source of one variant to stdout")
    p.add_argument("name")
    p.set_defaults(fn=cmd_render)
    for name, fn, hlp in (("dump", cmd_dump, "write rendered sources to a directory"),
                          ("compile", cmd_compile, "NVRTC-compile (no GPU needed), print ptxas resources")):
        p = sub.add_parser(name, help=hlp)
        p.add_argument("names", nargs="*", metavar="NAME")
        p.add_argument("--all", action="store_true", help="every variant")
        if name == "dump":
            p.add_argument("-o", "--output", required=True, metavar="DIR")
        else:
            p.add_argument("--arch", default="sm_90a", help="e.g. sm_90a (default), sm_80")
        p.set_defaults(fn=fn)
    p = sub.add_parser("check", help="one random case on the GPU against the NumPy reference")
    p.add_argument("--seed", type=int, default=None)
    p.set_defaults(fn=cmd_check)
    p = sub.add_parser("demo", help="the main job: check a kernel against the reference and time it "
                       "(without a GPU: compile + reference)")
    p.add_argument("--seed", type=int, default=None)
    p.set_defaults(fn=cmd_demo)
    p = sub.add_parser("info", help="GPU, CuPy, NVRTC and cache directories")
    p.set_defaults(fn=cmd_info)
    args = ap.parse_args(argv)
    try:
        args.fn(args)
    except (ValueError, TypeError, NotImplementedError, RuntimeError, OSError) as e:
        print(f"mla-cupy {args.cmd}: error: {str(e).splitlines()[0] if str(e) else type(e).__name__}",
              file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
