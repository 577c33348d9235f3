"""The ``mla-cupy`` command line (also ``python -m mla_cupy``).

    list                      every variant name
    render NAME               CUDA source of a variant to stdout
    dump [--all | NAME...] -o DIR
    compile [--all | NAME...] [--arch sm_90a]
                              NVRTC without a GPU: ptxas resources per variant,
                              marked where the arch's shared memory per block is
                              too small; a failure prints NVRTC's whole log and
                              where the source it compiled was dumped
    check                     one random case on the GPU against the reference
    demo                      the main job: on a GPU, a kernel checked against the
                              reference, its GPU time and an eager call's time;
                              without one, compile + reference
    info                      GPU, CuPy, NVRTC, cache directory
"""
from __future__ import annotations

import argparse
import os
import shutil
import sys
import time


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


class _Progress:
    """``[i/n]`` of a long run on stderr: one line rewritten in place on a
    terminal; elsewhere (CI logs, files) a line every tenth of the way."""

    def __init__(self, total: int, stream=None):
        self.total, self.stream = total, stream or sys.stderr
        self.tty = self.stream.isatty()
        self.every = max(1, -(-total // 10))
        self.done = 0
        self.t0 = time.monotonic()

    def _status(self) -> str:
        elapsed = time.monotonic() - self.t0
        eta = elapsed / self.done * (self.total - self.done) if self.done else 0.0
        return f"[{self.done}/{self.total}] {elapsed:.0f} s, about {eta:.0f} s left"

    def start(self, name: str) -> None:
        if self.tty:
            width = shutil.get_terminal_size().columns - 1
            self.stream.write(f"\r{self._status()}  {name}"[:width + 1] + "\x1b[K")
            self.stream.flush()

    def finish(self) -> None:
        """After an item, before its result line goes to stdout."""
        self.done += 1
        if self.tty:
            self.stream.write("\r\x1b[K")   # the result line takes the counter's place
        elif self.done % self.every == 0 or self.done == self.total:
            self.stream.write(f"compile {self._status()}\n")
        self.stream.flush()


SMEM_MARKER = "SMEM-OVER-LIMIT"


def cmd_compile(args):
    from .compiler import arch_number, compile_offline, parse_arch, smem_limit
    arch = parse_arch(args.arch, "--arch")
    keys = _keys(args)
    limit = smem_limit(arch)
    progress = _Progress(len(keys)) if args.all else None
    compiled = spilling = over = 0
    for key in keys:
        if progress:
            progress.start(key.name)
        min_sm = getattr(key, "min_sm", 0)
        res = compile_offline(key, arch=arch) if arch_number(arch) >= min_sm else None
        if progress:
            progress.finish()
        if res is None:
            print(f"{key.name:48s} {arch:7s} skipped: needs sm_{min_sm}+", flush=True)
            continue
        compiled += 1
        line = res.line()
        if limit is not None and res.smem > limit:
            over += 1
            line += f"  {SMEM_MARKER} ({arch} allows {limit}B per block)"
        print(line, flush=True)
        spilling += res.spill_stores > 0 or res.spill_loads > 0
    if limit is None:
        print(f"{arch}: shared memory per block not known here; not checked")
    elif over or args.all:
        fallback = (f": marked {SMEM_MARKER}; on such a GPU the dispatcher runs the next "
                    "smaller tile that fits, if any") if over else ""
        print(f"{over} of {compiled} compiled variant(s) need more shared memory per block than "
              f"{arch} allows ({limit} B){fallback}")
    if spilling:
        raise RuntimeError(f"{spilling} variant(s) spill registers")


def _find_gpu() -> str | None:
    """None when a CUDA GPU is usable, else why not (CUDA's own words kept
    for debugging: 'driver insufficient' often just means no GPU)."""
    try:
        import cupy
        if cupy.cuda.runtime.getDeviceCount() > 0:
            return None
        return "the CUDA runtime sees 0 devices"
    except Exception as e:  # noqa: BLE001 - CUDARuntimeError without a driver, ImportError, ...
        return f"{type(e).__name__}: {e}"


def _require_gpu(cmd: str) -> None:
    reason = _find_gpu()
    if reason is not None:
        raise RuntimeError(f"no CUDA GPU found; `{cmd}` runs a kernel and needs one ({reason})")


def _upload(case):
    """The case on the GPU, outputs NaN-filled, scalar args packed: returns
    ``(launch, out, lse, eager)``; ``launch()`` runs the kernels into ``out``
    and ``lse`` through the MAX-style entry (nothing allocated per call),
    ``eager()`` is the convenient ``mla_decode`` call a user writes."""
    import functools

    import cupy
    import ml_dtypes
    from .dispatch import generic_flare_mla_decode_kv_cache_ragged, mla_decode
    from .testing import nan_filled
    from .scalar_args import pack_scalar_args
    from .validate import output_dtype
    from .variants import D_V
    if case.sparse is not None:
        raise NotImplementedError("check/demo build dense cases only")
    q, offsets, kv = cupy.asarray(case.q), cupy.asarray(case.input_row_offsets), case.collection(cupy)
    sink = None if case.attn_sink is None else cupy.asarray(case.attn_sink)
    window = case.window if case.mask == "sliding_window_causal" else None
    num_tokens, num_heads = case.q.shape[:2]
    out = nan_filled((num_tokens, num_heads, D_V), ml_dtypes.bfloat16
                     if output_dtype(kv.layout) == "bfloat16" else output_dtype(kv.layout))
    lse = nan_filled((num_tokens, num_heads), "float32")
    fp8 = case.fp8_kwargs(cupy)
    sa = pack_scalar_args(case.batch_size, case.q_max_seq_len, kv.max_cache_length, num_heads,
                          layout=kv.layout.value, num_partitions=case.num_partitions, window=window)
    launch = functools.partial(
        generic_flare_mla_decode_kv_cache_ragged, q, offsets, kv, case.layer_idx, case.scale, out,
        sa, mask_str=case.mask, local_window_size=-1 if window is None else window,
        attn_sink_ptr=sink, lse=lse, **fp8)
    eager = functools.partial(
        mla_decode, q, kv, offsets, layer_idx=case.layer_idx, scale=case.scale, mask=case.mask,
        window=window, attn_sink=sink, num_partitions=case.num_partitions,
        q_max_seq_len=case.q_max_seq_len, **fp8)
    return launch, out, lse, eager


def _run_and_compare(case):
    """One NaN-filled launch against the reference, printed; exits 1 on a
    mismatch, else returns ``_upload``'s ``(launch, eager)`` for timing."""
    import numpy as np
    from .testing import compare, reference
    launch, out, lse, eager = _upload(case)
    launch()
    ref_out, ref_lse = reference(case)
    cmp = compare(out.get().astype(np.float32), lse.get(), ref_out, ref_lse, dtype=case.q.dtype)
    print(f"{case.describe()}\n{'PASS' if cmp.ok else 'FAIL'}: {cmp.message}")
    if not cmp.ok:
        raise SystemExit(1)
    return launch, eager


def cmd_check(args):
    import numpy as np
    from .testing import make_case
    _require_gpu("check")
    rng = np.random.default_rng(args.seed)
    case = make_case(rng, seq_lens=rng.integers(0, 4, 4), cache_lens=rng.integers(0, 2000, 4),
                     num_heads=int(rng.choice([16, 64, 128])), page_size=int(rng.choice([1, 16, 64])),
                     mask=str(rng.choice(["null", "causal", "sliding_window_causal"])),
                     window=int(rng.integers(1, 500)), sink="random")
    _run_and_compare(case)


_SPIN_SOURCE = r"""
extern "C" __global__ void mla_cupy_spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""


def gpu_time_us(launch, *, calls: int = 20, repeats: int = 15) -> float:
    """Median GPU time of one ``launch()`` in microseconds, host cost left out.

    A spin kernel holds the GPU while the host queues ``calls`` launches
    between two events, so the window holds only back-to-back GPU work; a
    repeat whose start event the GPU reached before the last launch was
    queued is retried with a longer spin."""
    import cupy
    import numpy as np
    spin = cupy.RawKernel(_SPIN_SOURCE, "mla_cupy_spin")
    stream = cupy.cuda.get_current_stream()
    t0 = time.perf_counter()
    for _ in range(calls):
        launch()
    spin_ns = int(4e9 * (time.perf_counter() - t0)) + 100_000
    stream.synchronize()
    start, stop = cupy.cuda.Event(), cupy.cuda.Event()
    times: list[float] = []
    while len(times) < repeats:
        spin((1,), (1,), (np.uint64(spin_ns),))
        start.record()
        for _ in range(calls):
            launch()
        stop.record()
        host_was_ahead = not start.done
        stop.synchronize()
        if host_was_ahead:
            times.append(cupy.cuda.get_elapsed_time(start, stop) * 1e3 / calls)
        elif spin_ns > 10**9:
            raise RuntimeError("gpu_time_us: the host could not queue the calls within a 1 s spin")
        else:
            spin_ns *= 2
    return float(np.median(times))


def eager_time_us(call, *, repeats: int = 50) -> tuple[float, float]:
    """Medians in microseconds of one ``call()`` on an idle GPU: until it
    returns (host cost) and until its GPU work is done (end to end)."""
    import cupy
    import numpy as np
    stream = cupy.cuda.get_current_stream()
    host, end_to_end = [], []
    for _ in range(repeats):
        stream.synchronize()
        t0 = time.perf_counter()
        call()
        t1 = time.perf_counter()
        stream.synchronize()
        host.append(t1 - t0)
        end_to_end.append(time.perf_counter() - t0)
    return float(np.median(host)) * 1e6, float(np.median(end_to_end)) * 1e6


def cmd_demo(args):
    import numpy as np
    from .testing import make_case, reference
    rng = np.random.default_rng(args.seed)
    case = make_case(rng, seq_lens=[1] * 8, cache_lens=rng.integers(1000, 4000, 8), num_heads=16,
                     page_size=64, sink="random")
    reason = _find_gpu()
    if reason is not None:
        from .compiler import compile_offline
        t0 = time.perf_counter()
        ref_out, _ = reference(case)
        t_ref = time.perf_counter() - t0
        res = compile_offline("mla_decode_bf16_causal_dense_fold0_m16")
        print(f"no CUDA GPU found ({reason}): compiled the kernel with NVRTC and ran the "
              "NumPy reference only")
        print(res.line())
        print(f"reference: {case.describe()}  ({t_ref:.2f} s, |out| max {np.abs(ref_out).max():.3f})")
        return
    launch, eager = _run_and_compare(case)
    gpu = gpu_time_us(launch)
    host, end_to_end = eager_time_us(eager)
    entry_host, _ = eager_time_us(launch)
    print(f"GPU time:   {gpu:.1f} us per call (median; calls queued back to back behind a GPU "
          "spin, so no host cost; L2 warm)")
    print(f"eager call: {host:.1f} us on the host until mla_decode returns, {end_to_end:.1f} us "
          "end to end (call + synchronize), medians of 50 (`mla-cupy bench` for the full table)")
    print(f"entry call: {entry_host:.1f} us on the host until generic_flare_mla_decode_kv_cache_ragged "
          "(prepacked ScalarArgs) returns, median of 50 (tools/host_cost.py for every path)")


def cmd_info(args):
    import cupy
    from cupy.cuda import nvrtc
    from .compiler import dump_dir
    print(f"mla_cupy  {__import__('mla_cupy').__version__}")
    print(f"cupy      {cupy.__version__}")
    print(f"nvrtc     {'.'.join(map(str, nvrtc.getVersion()))}")
    print(f"cache dir {os.environ.get('CUPY_CACHE_DIR', os.path.expanduser('~/.cupy/kernel_cache'))}")
    print(f"dump dir  {dump_dir()}")
    reason = _find_gpu()
    n = 0 if reason else cupy.cuda.runtime.getDeviceCount()
    if reason:
        print(f"gpu       none (render/compile/list work without one; {reason})")
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
            p.add_argument("--arch", default="sm_90a",
                           help="sm_90a (default), sm_90, sm_100a, sm_80, compute_90, 90, 9.0, ...")
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
    from . import bench
    p = sub.add_parser("bench", help="check, then time named cases or a custom shape; peers side by side")
    bench.add_arguments(p)
    p.set_defaults(fn=bench.cli)
    args = ap.parse_args(argv)
    try:
        args.fn(args)
        sys.stdout.flush()
    except BrokenPipeError:
        # The reader went away (`mla-cupy list | head`): stop quietly as Unix
        # tools do.  stdout now points at devnull so that the interpreter's
        # final flush cannot raise again (Python docs, "Note on SIGPIPE").
        os.dup2(os.open(os.devnull, os.O_WRONLY), sys.stdout.fileno())
        return 1
    except (ValueError, TypeError, NotImplementedError, RuntimeError, OSError) as e:
        # The whole message: a compile error's NVRTC log is what the user came for.
        print(f"mla-cupy {args.cmd}: error: {str(e) or type(e).__name__}", file=sys.stderr)
        return 2
    return 0


if __name__ == "__main__":
    sys.exit(main())
