"""``mla-cupy bench``: named cases or a custom shape, checked against the
reference, then timed; FlashMLA and FlashInfer side by side on the same inputs.

For each case:

1. Build the inputs on the GPU from a fixed seed: random rows in every page,
   a permuted block table, sentinel ids in table entries no key needs; sparse
   cases draw top-k distinct keys per token.
2. Run the kernel once and compare a sub-batch of sequences (the first, the
   last, the longest, the shortest and random ones, up to ``--check-seqs``)
   with the NumPy reference (:mod:`mla_cupy.reference`); sequences are
   independent, so those rows of the full-batch run must match.  A wrong
   result is reported and not timed.  Peers are checked the same way.
3. GPU time: before each of ``--repeats`` repeats a 512 MiB write flushes the
   L2; a spin kernel at the head of the queue keeps the GPU busy until the host
   has queued every repeat, so launch cost is hidden (the run says whether it
   was: ``ahead``); median of the CUDA-event times.
4. Eager time: wall clock per call over back-to-back calls, synchronised at
   the end, and the host's share (time until the last call returned).

FLOPs = 2·H·s_q·N·(576+512) per sequence (N its keys; top-k when sparse);
bytes = the cache rows read once (each sparse token's own rows) + q + out.
Ceilings are measured once per run: a 1 GiB device-to-device copy and an
8192³ bf16 matmul (torch; CuPy fp16 without torch).
"""
from __future__ import annotations

import argparse
import dataclasses
import datetime
import functools
import json
import math
import re
import statistics
import subprocess
import sys
import time

import numpy as np

from .variants import D_V, ROW_BYTES, Layout

D_QK = 576
FLOPS_PER_KEY_DIM = D_QK + D_V          # QK^T over 576 dims, PV over 512
LAYOUTS = ("bf16", "fp16", "fp8", "fp8_ds_mla")
MASKS = ("null", "causal")
LENGTHS = ("uniform", "normal")
MIN_REPEATS = 20
FLUSH_BYTES = 512 << 20
SCHEMA_VERSION = 2   # 2: the report's environment (environment_of)


# ------------------------------------------------------------------ cases


@dataclasses.dataclass(frozen=True)
class BenchCase:
    """One benchmark shape.  ``num_keys`` is s_k = N, the keys of a sequence
    including its new tokens (``cache_lengths`` = N - q_len); with
    ``lengths="normal"`` each sequence draws N_b = max(round(N(num_keys,
    num_keys / 2)), q_len) from ``seed``."""

    name: str
    batch_size: int
    num_heads: int
    q_len: int
    num_keys: int
    page_size: int = 64
    layout: str = "bf16"
    mask: str = "causal"
    lengths: str = "uniform"
    sparse_topk: int = 0
    sink: bool = False
    seed: int = 0
    fold: bool = False        # fold_shared_index: a sequence's tokens share its first token's indices

    def __post_init__(self):
        for field in ("batch_size", "num_heads", "q_len", "page_size"):
            _check_int(field, getattr(self, field), 1)
        _check_int("num_heads", self.num_heads, 1, 128)
        _check_int("num_keys", self.num_keys, self.q_len)
        _check_int("sparse_topk", self.sparse_topk, 0)
        for field, allowed in (("layout", LAYOUTS), ("mask", MASKS), ("lengths", LENGTHS)):
            if getattr(self, field) not in allowed:
                raise ValueError(f"{field}: expected one of {allowed}, got {getattr(self, field)!r}")
        if self.fold and not self.sparse:
            raise ValueError("fold: fold_shared_index needs a sparse case (sparse_topk > 0)")

    @property
    def sparse(self) -> bool:
        return self.sparse_topk > 0

    @property
    def row_bytes(self) -> int:
        return ROW_BYTES[(Layout(self.layout), D_QK)]

    @property
    def num_tokens(self) -> int:
        return self.batch_size * self.q_len

    def key_counts(self) -> np.ndarray:
        """N_b of every sequence (int64)."""
        if self.lengths == "uniform":
            return np.full(self.batch_size, self.num_keys, dtype=np.int64)
        rng = np.random.default_rng(self.seed)
        drawn = np.rint(rng.normal(self.num_keys, self.num_keys / 2, self.batch_size))
        return np.maximum(drawn, self.q_len).astype(np.int64)

    def describe(self) -> str:
        text = (f"B={self.batch_size} H={self.num_heads} s_q={self.q_len} s_k={self.num_keys}"
                f"{' (normal)' if self.lengths == 'normal' else ''} page={self.page_size} "
                f"{self.layout} {self.mask}")
        if self.sparse:
            text += f" sparse top-{self.sparse_topk}" + (" folded" if self.fold else "")
        return text + (" sink" if self.sink else "")


def _check_int(name, value, lo, hi=None):
    if isinstance(value, bool) or not isinstance(value, (int, np.integer)):
        raise TypeError(f"{name}: expected an int, got {type(value).__name__}")
    if value < lo or (hi is not None and value > hi):
        bound = f">= {lo}" if hi is None else f"in [{lo}, {hi}]"
        raise ValueError(f"{name}: expected an int {bound}, got {value}")


def _issue8_cases():
    """Issue 8's table: bf16 cache, page 64, one token per sequence unless said."""
    return [BenchCase("b128_h16_s8192", 128, 16, 1, 8192),
            BenchCase("b128_h128_s8192", 128, 128, 1, 8192),
            BenchCase("b128_sq2_h128_varlen_causal", 128, 128, 2, 8192, lengths="normal"),
            BenchCase("b1_h128_s65536", 1, 128, 1, 65536),
            BenchCase("b8_h16_s8192", 8, 16, 1, 8192),
            BenchCase("b32_h128_s4096", 32, 128, 1, 4096)]


def sparse_ds_mla_case(batch_size: int, q_len: int, num_heads: int, topk: int = 2048) -> BenchCase:
    """Issue 9's shape family: DeepSeek-V3.2 656-byte records, page 64, s_k 32768,
    top-``topk`` distinct keys per token, attention sink; named
    ``sparse_ds_mla_b{B}_sq{S}_h{H}`` (with ``_top{K}`` when topk is not 2048)."""
    name = f"sparse_ds_mla_b{batch_size}_sq{q_len}_h{num_heads}" + (f"_top{topk}" if topk != 2048 else "")
    return BenchCase(name, batch_size, num_heads, q_len, 32768, layout="fp8_ds_mla",
                     mask="null", sparse_topk=topk, sink=True)


_SPARSE_NAME = re.compile(r"sparse_ds_mla_b(\d+)_sq(\d+)_h(\d+)(?:_top(\d+))?")


def _sparse_cases():
    """Issue 9's table (sparse_ds_mla_case)."""
    shapes = [(128, 2, 128), (128, 1, 128), (128, 1, 64), (64, 2, 128), (2, 2, 128), (128, 1, 16)]
    return [sparse_ds_mla_case(b, s, h) for b, s, h in shapes]


def _fp8_dense_cases():
    """Issue 9's dense fp8 rows: issue 8's b=128 s_k=8192 shapes (h 16 and 128) over each
    fp8 layout the bench builds, beside the bf16 case of the same shape (the target is the
    bf16 time scaled by the bytes a row saves: 576/1152 for fp8, 656/1152 for fp8_ds_mla);
    and h 32, the narrow kernel's 32-row form, which reads the same bytes as h 16."""
    dense = {c.name: c for c in _issue8_cases()}
    dense["b128_h32_s8192"] = BenchCase("b128_h32_s8192", 128, 32, 1, 8192)
    return [case for h in (16, 32, 128) for case in
            [dense[f"b128_h{h}_s8192"]]
            + [BenchCase(f"{layout}_b128_h{h}_s8192", 128, h, 1, 8192, layout=layout)
               for layout in ("fp8", "fp8_ds_mla")]]


def _deepseek_cases():
    """DeepSeek decode shapes: 64 sequences, 8192 keys (mean), page 64."""
    return [BenchCase(f"ds_h{h}_sq{s}_{'ragged' if lens == 'normal' else 'uniform'}", 64, h, s, 8192,
                      lengths=lens)
            for h in (16, 32, 64, 128) for s in (1, 2, 4) for lens in LENGTHS]


def _sparse_more_cases():
    """Issue 9's sparse rows FlashMLA cannot run (its targets: 75% of the matmul rate
    where compute-bound, 85% of copy bandwidth where memory-bound): the suite's
    b=128 s_q=1 shape over the other layouts and head counts, and s_q 2 and 4 folded
    (one index row a sequence: its time should stay near s_q = 1's)."""
    def case(name, h, s, layout="fp8_ds_mla", fold=False):
        return BenchCase(name, 128, h, s, 32768, layout=layout, mask="null", sparse_topk=2048, sink=True,
                         fold=fold)
    return ([case(f"sparse_{layout}_b128_sq1_h128", 128, 1, layout) for layout in ("bf16", "fp8")]
            + [case("sparse_ds_mla_b128_sq1_h32", 32, 1)]
            + [case(f"sparse_ds_mla_b128_sq{s}_h{h}_fold", h, s, fold=True) for s in (2, 4) for h in (16, 64)])


SUITES = {"issue8": _issue8_cases(), "sparse": _sparse_cases(), "sparse_more": _sparse_more_cases(),
          "fp8": _fp8_dense_cases(), "deepseek": _deepseek_cases()}
SUITES["default"] = SUITES["issue8"] + SUITES["sparse"]
SUITES["all"] = (SUITES["default"] + SUITES["sparse_more"] + [c for c in SUITES["fp8"] if c not in SUITES["default"]]
                 + SUITES["deepseek"])
NAMED_CASES = {c.name: c for c in SUITES["all"]}


def case_named(name: str) -> BenchCase:
    """A named case (``mla-cupy bench --list``), or any shape of issue 9's sparse
    family by its name (sparse_ds_mla_case: ``sparse_ds_mla_b2_sq1_h128_top4096``)."""
    if name in NAMED_CASES:
        return NAMED_CASES[name]
    m = _SPARSE_NAME.fullmatch(name)
    if m:
        b, s, h, topk = (int(g) if g is not None else None for g in m.groups())
        case = sparse_ds_mla_case(b, s, h, 2048 if topk is None else topk)
        if case.name == name:    # canonical spelling only: one name a shape
            return case
    raise ValueError(f"CASE: expected a named case (mla-cupy bench --list) or "
                     f"sparse_ds_mla_b{{B}}_sq{{S}}_h{{H}}[_top{{K}}], got {name!r}")


# ------------------------------------------------------------------ model numbers


def flops(case: BenchCase) -> float:
    keys = np.full(case.batch_size, case.sparse_topk) if case.sparse else case.key_counts()
    return float(2 * case.num_heads * case.q_len * FLOPS_PER_KEY_DIM * keys.sum())


def bytes_moved(case: BenchCase) -> float:
    """Cache rows read once (a sparse token's rows are its own; folded, its sequence's) + q + out."""
    if case.sparse:
        rows = (case.batch_size if case.fold else case.num_tokens) * case.sparse_topk
    else:
        rows = int(case.key_counts().sum())
    q_bytes = case.num_tokens * case.num_heads * D_QK * 2
    out_bytes = case.num_tokens * case.num_heads * D_V * 2
    return float(rows * case.row_bytes + q_bytes + out_bytes)


def floor_us(flop: float, nbytes: float, copy_tb_s: float, matmul_tflop_s: float) -> float:
    """The roofline floor: the slower of moving the bytes and doing the FLOPs."""
    mem = nbytes / (copy_tb_s * 1e12)
    comp = flop / (matmul_tflop_s * 1e12) if math.isfinite(matmul_tflop_s) else 0.0
    return 1e6 * max(mem, comp)


def rates(case: BenchCase, us: float, ceilings: dict) -> dict:
    """TB/s, TFLOP/s and the % of the roofline floor reached at ``us``."""
    f, b = flops(case), bytes_moved(case)
    floor = floor_us(f, b, ceilings["copy_tb_s"], ceilings["matmul_tflop_s"])
    return dict(tb_s=b / (us * 1e-6) / 1e12, tflop_s=f / (us * 1e-6) / 1e12,
                roofline_pct=100.0 * floor / us)


def speed_ratio(ours_us, peer_us: dict):
    """Ours as a speed ratio against the fastest peer: best_peer_us / ours_us
    (> 1 means we are faster); (None, None) without a timed peer."""
    timed = {k: v for k, v in peer_us.items() if v is not None and math.isfinite(v)}
    if ours_us is None or not timed:
        return None, None
    best = min(timed, key=timed.get)
    return timed[best] / ours_us, best


# ------------------------------------------------------------------ arguments


def add_arguments(p: argparse.ArgumentParser) -> None:
    p.add_argument("cases", nargs="*", metavar="CASE",
                   help="named cases (--list shows them); none and no custom shape: --suite")
    p.add_argument("--suite", choices=sorted(SUITES), default=None,
                   help="a case list: issue8, sparse, sparse_more (sparse rows no peer runs), fp8 (dense fp8 beside bf16), "
                        "default (= issue8 + sparse), deepseek, all")
    p.add_argument("--list", action="store_true", help="print the named cases and exit (no GPU)")
    g = p.add_argument_group("custom shape (given --batch-size, --num-heads and --cache-len)")
    g.add_argument("--batch-size", type=int)
    g.add_argument("--num-heads", type=int)
    g.add_argument("--q-len", type=int, default=1, help="query tokens per sequence (default 1)")
    g.add_argument("--cache-len", type=int,
                   help="tokens cached before this step (C_b); a sequence has cache-len + q-len keys")
    g.add_argument("--page-size", type=int, default=64)
    g.add_argument("--layout", choices=LAYOUTS, default="bf16")
    g.add_argument("--mask", choices=MASKS, default="causal")
    g.add_argument("--lengths", choices=LENGTHS, default="uniform",
                   help="normal: keys per sequence ~ max(N(s_k, s_k/2), q_len)")
    g.add_argument("--sparse-topk", type=int, default=0, help="sparse top-k per token (0: dense)")
    g.add_argument("--fold", action="store_true",
                   help="sparse: fold_shared_index (a sequence's tokens share its first token's indices)")
    g.add_argument("--sink", action="store_true", help="random attention sink per head")
    g.add_argument("--seed", type=int, default=0)
    p.add_argument("--peer", action="append", default=[], metavar="NAME",
                   help="flashmla or flashinfer (repeatable); run on the same inputs when importable")
    p.add_argument("--batch-invariant", action="store_true",
                   help=f"also time mla_cupy with batch_invariant=True (entry {BATCH_INVARIANT_IMPL!r}), "
                        "to see its cost against the default split")
    p.add_argument("--schedule", choices=("step", "call", "both"), default="step",
                   help="step (default): mla_cupy's calls share a DecodeSchedule, as a model's layers do "
                        "within a decode step (the peers' metadata and plan are likewise made outside the "
                        "timed calls); call: each call finds its work; both: also time the latter, as "
                        f"entry {SCHEDULE_PER_CALL_IMPL!r}")
    p.add_argument("--repeats", type=int, default=30, help=f"timed repeats (>= {MIN_REPEATS})")
    p.add_argument("--eager-calls", type=int, default=50, help="back-to-back calls for the eager time")
    p.add_argument("--check-seqs", type=int, default=4, help="sequences checked against the reference")
    p.add_argument("--json", metavar="FILE", help="write every number, date, GPU, commit, command")
    p.add_argument("--plot", metavar="FILE.png", help="roofline chart (needs matplotlib)")
    p.add_argument("--commit", help="commit to record (default: git describe --always --dirty)")


def resolve_cases(args) -> list[BenchCase]:
    """The cases to run; ValueError / TypeError name the bad argument."""
    from .peers import PEERS
    for name in args.peer:
        if name not in PEERS:
            raise ValueError(f"--peer: expected one of {sorted(PEERS)}, got {name!r}")
    _check_int("--repeats", args.repeats, MIN_REPEATS)
    _check_int("--eager-calls", args.eager_calls, 1)
    _check_int("--check-seqs", args.check_seqs, 1)
    custom = [args.batch_size, args.num_heads, args.cache_len]
    cases = []
    if any(v is not None for v in custom):
        missing = [f for f, v in zip(("--batch-size", "--num-heads", "--cache-len"), custom) if v is None]
        if missing:
            raise ValueError(f"custom shape: expected --batch-size, --num-heads and --cache-len, "
                             f"missing {', '.join(missing)}")
        _check_int("--cache-len", args.cache_len, 0)
        _check_int("--q-len", args.q_len, 1)
        name = (f"custom_b{args.batch_size}_h{args.num_heads}_sq{args.q_len}_c{args.cache_len}"
                f"_p{args.page_size}_{args.layout}_{args.mask}"
                + (f"_top{args.sparse_topk}" if args.sparse_topk else "") + ("_fold" if args.fold else ""))
        cases.append(BenchCase(name, args.batch_size, args.num_heads, args.q_len,
                               args.cache_len + args.q_len, args.page_size, args.layout, args.mask,
                               args.lengths, args.sparse_topk, args.sink, args.seed, args.fold))
    for name in args.cases:
        cases.append(case_named(name))
    if args.suite is not None or not cases:
        cases += SUITES[args.suite or "default"]
    return cases


def print_case_list(file=None) -> None:
    for suite in ("issue8", "sparse", "sparse_more", "fp8", "deepseek"):
        print(f"# --suite {suite}", file=file or sys.stdout)
        for c in SUITES[suite]:
            print(f"{c.name:36s} {c.describe()}", file=file or sys.stdout)


def main(args) -> int:
    """Run the bench; 0 when every case of ours matched the reference and was
    timed, 1 when one was wrong or failed, 2 for bad arguments or no GPU."""
    try:
        cases = resolve_cases(args)
    except (ValueError, TypeError) as e:
        print(f"mla-cupy bench: error: {e}", file=sys.stderr)
        return 2
    if args.list:
        print_case_list()
        return 0
    if not _has_gpu():
        print("mla-cupy bench: error: no CUDA GPU found (the bench times kernels; --list "
              "shows the cases without one)", file=sys.stderr)
        return 2
    report = run(cases, args)
    if args.json:
        with open(args.json, "w", encoding="utf-8") as f:
            json.dump(report, f, indent=1)
        print(f"# wrote {args.json}")
    if args.plot:
        plot(report, args.plot)
    failed = [r["case"] for r in report["rows"] if r["impls"]["mla_cupy"]["status"] != "ok"]
    return 1 if failed else 0


def cli(args) -> None:
    """``set_defaults(fn=...)`` form for the ``mla-cupy`` CLI: exits with main's code."""
    rc = main(args)
    if rc:
        raise SystemExit(rc)


def _has_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


# ------------------------------------------------------------------ report


def new_report(*, gpu: str, commit: str, command: list[str], ceilings: dict, repeats: int,
               environment: dict | None = None) -> dict:
    return dict(schema=SCHEMA_VERSION, date=datetime.datetime.now().isoformat(timespec="seconds"),
                gpu=gpu, commit=commit, command=command, ceilings=ceilings, repeats=repeats,
                environment=environment or {}, rows=[])


def environment_of(cupy, props: dict, peers=()) -> dict:
    """What else a row's time depends on, for the report: CuPy, NVRTC (it compiles our
    kernels: another version is other SASS), the driver and runtime, the GPU's SMs and
    clocks, and the peers' package versions.  (Two H200s ran the same code's b=128 h=128
    in 500.8 and 458.2 us: tools/results/NOTES.md session 25.)"""
    from importlib import metadata

    def version(dist):
        try:
            return metadata.version(dist)
        except metadata.PackageNotFoundError:
            return None
    rt = cupy.cuda.runtime

    def khz_to_mhz(field):   # (CUDA 13's device properties dropped the clock fields: None)
        return int(props[field]) // 1000 if props.get(field) else None

    def known(read):         # a field this CuPy or driver cannot tell is None, not a failed run
        try:
            return read()
        except Exception:  # noqa: BLE001
            return None
    env = dict(cupy=cupy.__version__, nvrtc=known(lambda: ".".join(map(str, cupy.cuda.nvrtc.getVersion()))),
               driver=known(rt.driverGetVersion), runtime=known(rt.runtimeGetVersion),
               sm_count=known(lambda: int(props["multiProcessorCount"])), sm_clock_mhz=khz_to_mhz("clockRate"),
               memory_clock_mhz=khz_to_mhz("memoryClockRate"))
    env.update({f"peer_{p.name}": version(p.package) for p in peers if getattr(p, "package", None)})
    return env


def case_row(case: BenchCase, ceilings: dict) -> dict:
    f, b = flops(case), bytes_moved(case)
    return dict(case=case.name, shape=dataclasses.asdict(case), flops=f, bytes=b,
                floor_us=floor_us(f, b, ceilings["copy_tb_s"], ceilings["matmul_tflop_s"]),
                impls={}, ratio=None, best_peer=None)


def timed_entry(case, ceilings, *, us, best_us, ahead, eager_us, host_us, max_err, **extra) -> dict:
    return dict(status="ok", us=us, best_us=best_us, ahead=ahead, eager_us=eager_us,
                host_us=host_us, max_err=max_err, **rates(case, us, ceilings), **extra)


def finish_row(row: dict) -> None:
    ours = row["impls"].get("mla_cupy", {})
    peers = {k: v.get("us") for k, v in row["impls"].items() if not k.startswith("mla_cupy")}
    row["ratio"], row["best_peer"] = speed_ratio(ours.get("us"), peers)


def format_row(row: dict, peer_names) -> str:
    ours = row["impls"]["mla_cupy"]
    if ours["status"] != "ok":
        text = f"{row['case']:36s} {ours['status'].upper()}: {ours.get('reason', '')}"
    else:
        text = (f"{row['case']:36s} P={ours.get('num_partitions', '-'):>2} {ours['us']:9.1f} us "
                f"{ours['tb_s']:5.2f} TB/s {ours['tflop_s']:6.1f} TFLOP/s {ours['roofline_pct']:5.1f}% "
                f"| eager {ours['eager_us']:8.1f} host {ours['host_us']:6.1f}"
                f"{'' if ours['ahead'] else ' (host not ahead)'}")
    for name in peer_names:
        e = row["impls"].get(name, {})
        text += f" | {name} " + (f"{e['us']:9.1f} us" if e.get("status") == "ok"
                                 else f"{e.get('status', 'n/a')} ({e.get('reason', '')})")
    if row["ratio"] is not None:
        text += f" | x{row['ratio']:.2f} vs {row['best_peer']}"
    return text


def plot(report: dict, path: str) -> bool:
    """A roofline chart of every timed entry; False (and a message) without matplotlib."""
    try:
        import matplotlib
        matplotlib.use("Agg")
        import matplotlib.pyplot as plt
    except ImportError:
        print(f"mla-cupy bench: --plot: matplotlib is not importable, no chart written to {path}",
              file=sys.stderr)
        return False
    ceil = report["ceilings"]
    bw, mm = ceil["copy_tb_s"], ceil["matmul_tflop_s"]
    fig, ax = plt.subplots(figsize=(8, 5.5))
    xs = np.logspace(0, 4, 200)
    ax.plot(xs, np.minimum(xs * bw, mm if math.isfinite(mm) else np.inf), "k-", lw=1,
            label=f"roofline ({bw:.2f} TB/s copy, {mm:.0f} TFLOP/s matmul)")
    markers = {"mla_cupy": "o", "flashmla": "s", "flashinfer": "^"}
    for impl, marker in markers.items():
        pts = [(r["flops"] / r["bytes"], r["impls"][impl]["tflop_s"]) for r in report["rows"]
               if r["impls"].get(impl, {}).get("status") == "ok"]
        if pts:
            ax.scatter(*zip(*pts), marker=marker, label=impl)
    ax.set(xscale="log", yscale="log", xlabel="FLOP / byte", ylabel="TFLOP/s",
           title=f"{report['gpu']}  {report['commit']}  {report['date'][:10]}")
    ax.legend(fontsize=8)
    fig.savefig(path, dpi=120, bbox_inches="tight")
    print(f"# wrote {path}")
    return True


# ------------------------------------------------------------------ GPU run


def run(cases, args) -> dict:
    import cupy

    from .peers import PEERS
    props = cupy.cuda.runtime.getDeviceProperties(cupy.cuda.Device().id)
    gpu = props["name"].decode()
    timer = Timer()
    ceilings = timer.ceilings()
    peers = [PEERS[name] for name in dict.fromkeys(args.peer)]
    report = new_report(gpu=gpu, commit=args.commit or _git_commit(), command=list(sys.argv),
                        ceilings=ceilings, repeats=args.repeats, environment=environment_of(cupy, props, peers))
    print(f"# {report['date']} {gpu} commit {report['commit']}: copy {ceilings['copy_tb_s']:.2f} TB/s, "
          f"matmul {ceilings['matmul_tflop_s']:.0f} TFLOP/s ({ceilings['matmul_source']}); "
          f"median of {args.repeats}, L2 flushed ({FLUSH_BYTES >> 20} MiB) before each", flush=True)
    print("# " + ", ".join(f"{k} {v}" for k, v in report["environment"].items()), flush=True)
    for case in cases:
        row = case_row(case, ceilings)
        report["rows"].append(row)
        try:
            bench_case(case, row, peers, timer, ceilings, args)
        except Exception as e:  # noqa: BLE001 - one failing case must not stop the table
            row["impls"]["mla_cupy"] = dict(status="error", reason=_one_line(e))
        finish_row(row)
        extra = [SCHEDULE_PER_CALL_IMPL] if getattr(args, "schedule", "step") == "both" else []
        extra += [BATCH_INVARIANT_IMPL] if getattr(args, "batch_invariant", False) else []
        print(format_row(row, extra + [p.name for p in peers]), flush=True)
        cupy.get_default_memory_pool().free_all_blocks()
    return report


def bench_case(case, row, peers, timer, ceilings, args) -> None:
    inputs = build_inputs(case)
    picked = check_sequences(case, inputs.key_counts, args.check_seqs)
    t0 = time.perf_counter()
    expected = reference_rows(case, inputs, picked)
    row["check"] = dict(sequences=picked, reference_s=round(time.perf_counter() - t0, 3))
    schedule = getattr(args, "schedule", "step")
    impls = [("mla_cupy", lambda: ours(case, inputs, schedule=schedule != "call"), None)]
    if schedule == "both":
        impls.append((SCHEDULE_PER_CALL_IMPL, lambda: ours(case, inputs, schedule=False), None))
    if getattr(args, "batch_invariant", False):
        impls.append((BATCH_INVARIANT_IMPL, lambda: ours(case, inputs, batch_invariant=True), None))
    impls += [(p.name, (lambda p=p: p.prepare(case, inputs)), p.available() or p.unsupported(case))
              for p in peers]
    for name, prepare, reason in impls:
        entry = row["impls"][name] = {}
        if reason is not None:
            entry.update(status="n/a", reason=reason)
            continue
        stage = "n/a"              # a peer failing before its check cannot run the case
        try:
            t0 = time.perf_counter()
            call, result, extra = prepare()
            result()                    # first call: compiles / JIT-builds / plans
            timer.sync()
            extra["first_call_s"] = round(time.perf_counter() - t0, 3)
            stage = "error"
            out, lse = result()
            ok, max_err, message = compare_rows(case, picked, expected, out, lse)
            if not ok:
                entry.update(status="wrong", reason=message)
                continue
            us, best, ahead = timer.gpu_us(call, args.repeats)
            eager, host = timer.eager_us(call, args.eager_calls)
        except Exception as e:  # noqa: BLE001 - a peer's failure is its row's, not the run's
            if name == "mla_cupy":
                raise
            entry.update(status=stage, reason=_one_line(e))
            continue
        entry.update(timed_entry(case, ceilings, us=us, best_us=best, ahead=ahead, eager_us=eager,
                                 host_us=host, max_err=max_err, **extra))


def _one_line(e: Exception) -> str:
    text = str(e).strip()
    return f"{type(e).__name__}: {text.splitlines()[0][:200] if text else ''}"


def _git_commit() -> str:
    """The checkout's commit, ``-dirty`` when tracked files differ from it (a
    copied tree whose git metadata is older than its files reads as dirty)."""
    try:
        r = subprocess.run(["git", "describe", "--always", "--dirty", "--abbrev=7"], capture_output=True,
                           text=True, timeout=10)
        return r.stdout.strip() or "unknown"
    except (OSError, subprocess.SubprocessError):
        return "unknown"


@dataclasses.dataclass
class Inputs:
    """Device arrays of one case (CuPy), shared by us and the peers."""

    q: object                  # [T, H, 576] bf16 / fp16
    offsets: object            # [B + 1] int32
    kv: object                 # PagedKVCollection (blocks [nb, 1, page, row])
    sink: object               # [H] float32 or None
    d_indices: object          # [T, topk] int32 or None
    key_counts: np.ndarray     # host N_b
    scale: float


def build_inputs(case: BenchCase, xp=None) -> Inputs:
    """The case's arrays, drawn from ``case.seed``: on the GPU (``xp`` None: CuPy),
    or with NumPy for small cases in CPU tests."""
    import ml_dtypes

    from .cache import PagedKVCollection
    from .testing import SENTINEL_PAGE
    xp = xp or _cupy()
    rng, draw = np.random.default_rng(case.seed), _Draw(xp, case.seed)
    counts = case.key_counts()
    pages = -(-counts // case.page_size)
    num_blocks = int(pages.sum())
    table = np.full((case.batch_size, int(pages.max()) + 1), SENTINEL_PAGE, dtype=np.int32)
    perm = rng.permutation(num_blocks).astype(np.int32)
    starts = np.concatenate([[0], np.cumsum(pages)])
    for b in range(case.batch_size):
        table[b, :pages[b]] = perm[starts[b]:starts[b + 1]]
    blocks = random_rows(num_blocks * case.page_size, case.layout, draw)
    blocks = blocks.reshape(num_blocks, 1, case.page_size, blocks.shape[-1])
    kv = PagedKVCollection(blocks, xp.asarray(table), xp.asarray((counts - case.q_len).astype(np.int32)),
                           case.page_size, max_cache_length=int(counts.max()) - case.q_len)
    q_dtype = np.float16 if case.layout == "fp16" else ml_dtypes.bfloat16
    q = draw.normal((case.num_tokens, case.num_heads, D_QK)).astype(q_dtype)
    offsets = xp.arange(0, case.num_tokens + 1, case.q_len, dtype=np.int32)
    sink = xp.asarray(rng.normal(0.0, 2.0, case.num_heads).astype(np.float32)) if case.sink else None
    d_indices = sparse_indices(case, table, counts, draw) if case.sparse else None
    return Inputs(q, offsets, kv, sink, d_indices, counts, D_QK ** -0.5)


def _cupy():
    import cupy
    return cupy


class _Draw:
    """float32 draws from one seed on the GPU (CuPy) or the host (NumPy)."""

    def __init__(self, xp, seed):
        self.xp, self.rng = xp, xp.random.RandomState(seed)

    def normal(self, shape):
        if self.xp is np:
            return self.rng.standard_normal(shape).astype(np.float32)
        return self.rng.standard_normal(shape, dtype=np.float32)

    def uniform(self, shape):
        if self.xp is np:
            return self.rng.random_sample(shape).astype(np.float32)
        return self.rng.random_sample(shape, dtype=np.float32)


def random_rows(num_rows: int, layout: str, draw: _Draw, chunk: int = 1 << 20):
    """[num_rows, row] cache rows of N(0, 1) values, quantised for fp8 layouts
    (on the GPU by mla_cupy.quantize_gpu, on the host by mla_cupy.quantize)."""
    import ml_dtypes

    xp = draw.xp
    if layout in ("bf16", "fp16"):
        return draw.normal((num_rows, D_QK)).astype(np.float16 if layout == "fp16" else ml_dtypes.bfloat16)
    if xp is np:
        from . import quantize as quantizers
    else:
        from . import quantize_gpu as quantizers
    quant = quantizers.quantize_fp8_ds_mla if layout == "fp8_ds_mla" else quantizers.quantize_fp8
    out = xp.empty((num_rows, ROW_BYTES[(Layout(layout), D_QK)]), dtype=np.uint8)
    for lo in range(0, num_rows, chunk):
        hi = min(num_rows, lo + chunk)
        out[lo:hi] = quant(draw.normal((hi - lo, D_QK)))
    return out


def sparse_indices(case, table, counts, draw: _Draw):
    """Each token: top-k distinct keys of its own sequence as encoded physical
    rows ``block * page_size + slot``; -1 pads a sequence with fewer keys."""
    xp = draw.xp
    seq = xp.asarray(np.repeat(np.arange(case.batch_size), case.q_len))
    n = xp.asarray(counts)[seq][:, None]
    width = max(int(counts.max()), case.sparse_topk)
    order = xp.where(xp.arange(width)[None, :] < n, draw.uniform((case.num_tokens, width)), 2.0)
    keys = xp.argsort(order, axis=1)[:, :case.sparse_topk].astype(np.int64)   # keys past N_b sort last
    valid = keys < n
    keys = xp.where(valid, keys, 0)            # padding: any key of the table, then -1
    tab = xp.asarray(table).astype(np.int64)[seq[:, None], keys // case.page_size]
    rows = tab * case.page_size + keys % case.page_size
    return xp.where(valid, rows, -1).astype(np.int32)


BATCH_INVARIANT_IMPL = "mla_cupy[batch_invariant]"
SCHEDULE_PER_CALL_IMPL = "mla_cupy[schedule per call]"


def ours(case, inputs, batch_invariant=False, schedule=True):
    """(timed call, checked call -> (out, lse), extra fields) of mla_cupy's serving path
    (``batch_invariant``: the fixed split of docs/spec.md §10).  ``schedule``: the calls
    share one DecodeSchedule, as a decode step's layers do: the first call (the
    checked one, untimed) writes it and the timed calls read it."""
    import cupy

    from .decode_schedule import DecodeSchedule
    from .dispatch import generic_flare_mla_decode_kv_cache_ragged
    from .scalar_args import pack_scalar_args
    kv = inputs.kv
    sa = pack_scalar_args(case.batch_size, case.q_len, kv.max_cache_length, case.num_heads,
                          layout=case.layout, sparse_mla=case.sparse, indices_stride=case.sparse_topk,
                          fold_shared_index=case.fold,
                          batch_invariant=batch_invariant)
    out = cupy.empty((case.num_tokens, case.num_heads, D_V), dtype=inputs.q.dtype)
    lse = cupy.empty((case.num_tokens, case.num_heads), dtype=np.float32)
    kw = dict(mask_str=case.mask, attn_sink_ptr=inputs.sink, batch_invariant=batch_invariant)
    if case.sparse:
        kw.update(sparse_mla=True, d_indices=inputs.d_indices, indices_stride=case.sparse_topk,
                  fold_shared_index=case.fold)

    step = DecodeSchedule() if schedule else None

    def call(with_lse=False):
        generic_flare_mla_decode_kv_cache_ragged(inputs.q, inputs.offsets, kv, 0, inputs.scale, out,
                                                 sa, lse=lse if with_lse else None, schedule=step, **kw)

    def result():
        call(with_lse=True)
        return out, lse
    return call, result, dict(num_partitions=sa.num_partitions, schedule="step" if schedule else "call")


# ------------------------------------------------------------------ check


def check_sequences(case: BenchCase, counts: np.ndarray, n: int) -> list[int]:
    """The first, last, longest and shortest sequences, then random ones, up to n."""
    picked = list(dict.fromkeys([0, case.batch_size - 1, int(counts.argmax()), int(counts.argmin())]))
    rest = np.random.default_rng(case.seed + 1).permutation(case.batch_size)
    picked += [int(b) for b in rest if b not in picked]
    return sorted(picked[:min(n, case.batch_size)])


def reference_rows(case, inputs, picked) -> dict:
    """{b: (ref_out [s_q, H, 512], ref_lse [s_q, H], max|V|, slack)} from the NumPy reference on a
    compact host copy of the pages (or rows) sequence b reads."""
    from .cache import PagedKVCollection
    from .reference import dequantize_rows, mla_decode_reference
    from .testing import dequantization_slack
    kv = inputs.kv
    table = _host(kv.lookup_table)
    page = case.page_size
    expected = {}
    for b in picked:
        rows = slice(b * case.q_len, (b + 1) * case.q_len)
        q = _host(inputs.q[rows])
        kw = {}
        if case.sparse:
            idx = _host(inputs.d_indices[rows]).astype(np.int64)
            used = np.unique(idx[idx >= 0] // page)
            new_block = np.searchsorted(used, np.maximum(idx, 0) // page)
            kw = dict(sparse_mla=True, fold_shared_index=case.fold,
                      d_indices=np.where(idx >= 0, new_block * page + idx % page, -1).astype(np.int32))
            lookup = np.zeros((1, 1), dtype=np.int32)
        else:
            used = table[b, :-(-int(inputs.key_counts[b]) // page)].astype(np.int64)
            lookup = np.arange(len(used), dtype=np.int32)[None]
        blocks = _host(kv.blocks[_array_module(kv.blocks).asarray(used)])
        sub = PagedKVCollection(blocks, lookup, np.array([inputs.key_counts[b] - case.q_len], np.int32),
                                page)
        ref = functools.partial(
            mla_decode_reference, q, np.array([0, case.q_len], np.int32), sub, 0, inputs.scale,
            mask_str=case.mask, attn_sink_ptr=None if inputs.sink is None else _host(inputs.sink), **kw)
        out, lse = ref()
        slack = dequantization_slack(out, lse, *ref(dequantize_to="bfloat16")) \
            if case.layout == "fp8_ds_mla" else None
        _, v = dequantize_rows(blocks.reshape(-1, blocks.shape[-1]), case.layout)
        expected[b] = (out, lse, float(np.abs(v).max(initial=0.0)), slack)
    return expected


def compare_rows(case, picked, expected, out, lse):
    """(ok, max_err, message) of the picked sequences' rows; ``lse`` None skips the LSE
    (peers' conventions differ: base 2, [B, H, s_q])."""
    import ml_dtypes

    from .testing import compare, tolerance
    tol_dtype = np.float16 if case.layout == "fp16" else ml_dtypes.bfloat16
    worst = 0.0
    for b in picked:
        rows = slice(b * case.q_len, (b + 1) * case.q_len)
        ref_out, ref_lse, v_scale, slack = expected[b]
        got_out = _host_f32(out[rows])
        got_lse = ref_lse if lse is None else _host_f32(lse[rows])
        cmp = compare(got_out, got_lse, ref_out, ref_lse, tol=tolerance(tol_dtype, v_scale), slack=slack)
        if not cmp.ok:
            return False, cmp.max_err, f"sequence {b}: {cmp.message}"
        worst = max(worst, cmp.max_err)
    return True, worst, ""


def _array_module(x):
    if isinstance(x, np.ndarray):
        return np
    return _cupy()


def _host(x) -> np.ndarray:
    """CuPy, torch or NumPy -> NumPy."""
    if hasattr(x, "detach"):
        return x.detach().cpu().numpy()
    return x.get() if hasattr(x, "get") else np.asarray(x)


def _host_f32(x) -> np.ndarray:
    if hasattr(x, "detach"):                  # torch: bf16 has no NumPy dtype
        return x.detach().float().cpu().numpy()
    return _host(x).astype(np.float32)


# ------------------------------------------------------------------ timing


_SPIN_SRC = r"""
extern "C" __global__ void mla_bench_spin(unsigned long long ns) {
    unsigned long long t0, t;
    asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t0));
    do { asm volatile("mov.u64 %0, %%globaltimer;" : "=l"(t)); } while (t - t0 < ns);
}
"""


# Timer.warm: how long the GPU is kept busy before each implementation's timing, and
# about how many 512 MiB flushes a second the H200 does (~4 TB/s).
WARM_MS = 50.0
FLUSH_PER_S = 7800


class Timer:
    """CUDA-event timing on the current stream, with an L2 flush and a
    head-of-queue spin so that the host is ahead of the GPU."""

    def __init__(self):
        import cupy
        self.cupy = cupy
        self.flush_buf = cupy.empty(FLUSH_BYTES, dtype=np.uint8)
        self.spin = cupy.RawKernel(_SPIN_SRC, "mla_bench_spin")

    def sync(self):
        self.cupy.cuda.Device().synchronize()

    def flush(self):
        self.cupy.cuda.runtime.memsetAsync(self.flush_buf.data.ptr, 0, FLUSH_BYTES,
                                           self.cupy.cuda.get_current_stream().ptr)

    def warm(self, ms: float = WARM_MS):
        """About ``ms`` of back-to-back flushes (512 MiB memsets), then a sync: every
        implementation is timed on a GPU that has been busy for the same while, none
        on one that idled through a CPU reference check.  (On the H200 it moved no row
        by more than 2%: tools/results/NOTES.md session 25.)"""
        for _ in range(max(1, int(ms * 1e-3 * FLUSH_PER_S))):
            self.flush()
        self.sync()

    def gpu_us(self, fn, repeats) -> tuple[float, float, bool]:
        """(median µs, best µs, host ahead) over ``repeats`` flushed calls, after warm()."""
        cupy = self.cupy
        self.warm()
        _, host_us = self.eager_us(lambda: (self.flush(), fn()), 5)
        spin_ns = int(1e3 * (2 * repeats * host_us + 1000))
        for _ in range(4):
            events = [(cupy.cuda.Event(), cupy.cuda.Event()) for _ in range(repeats)]
            head = cupy.cuda.Event()
            self.spin((1,), (1,), (np.uint64(spin_ns),))
            head.record()
            for start, stop in events:
                self.flush()
                start.record()
                fn()
                stop.record()
            ahead = not head.done     # still spinning: every repeat was queued in time
            events[-1][1].synchronize()
            if ahead:
                break
            spin_ns *= 4
        times = [1e3 * cupy.cuda.get_elapsed_time(a, b) for a, b in events]
        return statistics.median(times), min(times), ahead

    def eager_us(self, fn, calls) -> tuple[float, float]:
        """(wall µs per call, host µs per call) over back-to-back calls."""
        self.sync()
        t0 = time.perf_counter()
        for _ in range(calls):
            fn()
        t1 = time.perf_counter()
        self.sync()
        t2 = time.perf_counter()
        return 1e6 * (t2 - t0) / calls, 1e6 * (t1 - t0) / calls

    def _event_median(self, fn, repeats=10) -> float:
        cupy = self.cupy
        fn()
        times = []
        for _ in range(repeats):
            a, b = cupy.cuda.Event(), cupy.cuda.Event()
            a.record()
            fn()
            b.record()
            b.synchronize()
            times.append(cupy.cuda.get_elapsed_time(a, b) * 1e-3)
        return statistics.median(times)

    def ceilings(self) -> dict:
        """Copy bandwidth (bytes read + written) and the bf16 matmul rate, measured now."""
        cupy = self.cupy
        n = 1 << 30
        src, dst = cupy.ones(n, dtype=np.uint8), cupy.empty(n, dtype=np.uint8)
        kind = cupy.cuda.runtime.memcpyDeviceToDevice
        t = self._event_median(lambda: cupy.cuda.runtime.memcpyAsync(
            dst.data.ptr, src.data.ptr, n, kind, cupy.cuda.get_current_stream().ptr))
        copy_tb_s = 2 * n / t / 1e12
        del src, dst
        m = 8192
        try:
            import torch
            x = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
            y = torch.randn(m, m, device="cuda", dtype=torch.bfloat16)
            source = "torch bf16"
            mm = lambda: x @ y  # noqa: E731
        except ImportError:
            x = cupy.random.standard_normal((m, m), dtype=np.float32).astype(np.float16)
            y = x.copy()
            source = "cupy fp16 (no torch)"
            mm = lambda: x @ y  # noqa: E731
        for _ in range(3):
            mm()
        matmul = 2 * m**3 / self._event_median(mm) / 1e12
        cupy.get_default_memory_pool().free_all_blocks()
        return dict(copy_tb_s=copy_tb_s, matmul_tflop_s=matmul, matmul_source=source)
