"""Each kernel's GPU time in a call of `mla-cupy bench`'s named cases, by Nsight Compute.

    PYTHONPATH=. python3 tools/kernel_times.py CASE [CASE ...] [--calls 10] [--ncu ncu] [--peer NAME]

Where a call's time goes between the decode and the combine: every call of a case runs
under `ncu --clock-control none` (the GPU's own clocks, not ncu's locked base clock, so an
SM-bound kernel is not made slower than a memory-bound one), `--cache-control all` (L2
flushed before each kernel) and serialised (no programmatic dependent launch overlap).
Only `mla_decode_*` and `mla_combine_*` kernels are profiled.  The bench's own timer is not
used: its head-of-queue spin kernel waits seconds under ncu (session 14 lost a call to it).

Prints, per case and kernel, the median and the best of `--calls` calls, in µs.
"""
from __future__ import annotations

import argparse
import collections
import csv
import statistics
import subprocess
import sys

KERNELS = "regex:mla_(decode|combine)"
PEER_KERNELS = "regex:."          # a peer's call: all its kernels (metadata, decode, combine)
NVTX_RANGE = "timed_call"         # around each call after the warm-up (not the inputs' kernels)


def summarise(csv_text: str) -> dict[str, list[float]]:
    """Kernel name (without its parameter list) -> the durations (µs) of its launches,
    from `ncu --csv --metrics gpu__time_duration.sum` output (ns, or us / ms by unit)."""
    rows = list(csv.reader(line for line in csv_text.splitlines() if line.startswith('"')))
    if not rows:
        return {}
    head = rows[0]
    name_at, unit_at, value_at = head.index("Kernel Name"), head.index("Metric Unit"), head.index("Metric Value")
    scale = {"nsecond": 1e-3, "ns": 1e-3, "usecond": 1.0, "us": 1.0, "msecond": 1e3, "ms": 1e3}
    times: dict[str, list[float]] = collections.defaultdict(list)
    for r in rows[1:]:
        if len(r) <= max(name_at, unit_at, value_at):
            continue
        unit = r[unit_at].strip()
        if unit not in scale:
            raise ValueError(f"ncu metric unit: expected one of {sorted(scale)}, got {unit!r}")
        times[r[name_at].split("(")[0]].append(float(r[value_at].replace(",", "")) * scale[unit])
    return dict(times)


def format_summary(case: str, times: dict[str, list[float]]) -> list[str]:
    return [f"{case:26s} {name[:64]:64s} n={len(v):3d} median {statistics.median(v):8.1f} us  "
            f"best {min(v):8.1f}" for name, v in times.items()]


def check_arguments(cases, peer: str | None) -> None:
    """Named cases and an importable peer (None: ours), before anything runs: a
    ValueError naming the argument (ncu_compare.py checks its own the same way)."""
    from mla_cupy import bench, peers
    for name in cases:
        bench.case_named(name)
    if peer is not None:
        if peer not in peers.PEERS:
            raise ValueError(f"--peer: expected one of {sorted(peers.PEERS)}, got {peer!r}")
        why = peers.PEERS[peer].available()
        if why:
            raise ValueError(f"--peer {peer}: {why}")


def child(case_name: str, calls: int, peer: str | None = None, ablate: str | None = None) -> None:
    """The profiled process: one warm-up call, then `calls` calls, each synchronised.
    `ablate` (producer_ceiling.parse_ablation's spec): the case's Hopper decode kernel
    rebuilt without the named parts after the warm-up (its output is garbage)."""
    import cupy

    from mla_cupy import bench, peers
    case = bench.case_named(case_name)
    inputs = bench.build_inputs(case)
    if peer:
        call, _, _ = peers.PEERS[peer].prepare(case, inputs)
    else:
        call, _, _ = bench.ours(case, inputs)
    call()
    cupy.cuda.Device().synchronize()
    if ablate:
        import producer_ceiling
        key = producer_ceiling.decode_key_in_use()
        if key is None:
            raise ValueError(f"--ablate: {case_name} runs no single Hopper decode kernel")
        producer_ceiling.swap_decode_kernel(key, producer_ceiling.transformed_source(key, ablate))
        call, _, _ = bench.ours(case, inputs)   # a new plan, with the swapped kernel
        call()
        cupy.cuda.Device().synchronize()
    for _ in range(calls):
        cupy.cuda.nvtx.RangePush(NVTX_RANGE)   # ncu_compare.py profiles the kernels inside
        call()
        cupy.cuda.nvtx.RangePop()
        cupy.cuda.Device().synchronize()


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tools/kernel_times.py", description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", metavar="CASE")
    ap.add_argument("--calls", type=int, default=10)
    ap.add_argument("--ncu", default="ncu")
    ap.add_argument("--peer", help="profile this peer's call instead of ours (flashmla, flashinfer)")
    ap.add_argument("--child", help=argparse.SUPPRESS)
    ap.add_argument("--ablate", help=argparse.SUPPRESS)   # ncu_hotspots.py --ablate
    a = ap.parse_args(argv)
    if a.child:
        child(a.child, a.calls, a.peer, a.ablate)
        return 0
    check_arguments(a.cases, a.peer)
    if a.calls < 1:
        raise ValueError(f"--calls: expected at least 1, got {a.calls}")
    for name in a.cases:
        cmd = [a.ncu, "--clock-control", "none", "--cache-control", "all", "--csv",
               "--metrics", "gpu__time_duration.sum", "--kernel-name",
               PEER_KERNELS if a.peer else KERNELS,
               sys.executable, __file__, "--child", name, "--calls", str(a.calls)]
        if a.peer:
            cmd += ["--peer", a.peer]
        done = subprocess.run(cmd, capture_output=True, text=True)
        times = summarise(done.stdout)
        if done.returncode != 0 or not times:
            print(f"{name}: ncu exit {done.returncode}\n{done.stderr[-2000:]}", file=sys.stderr)
            continue
        print("\n".join(format_summary(f"{name} {a.peer}" if a.peer else name, times)), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
