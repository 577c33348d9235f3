"""Our kernels and a peer's, side by side, by Nsight Compute's raw metrics.

    PYTHONPATH=.:/tmp/site python3 tools/ncu_compare.py CASE [CASE ...] --peer flashmla [--out DIR]
    python3 tools/ncu_compare.py --raw ours.csv peer.csv      (saved raw pages, no GPU)
    PYTHONPATH=. python3 tools/ncu_compare.py CASE --peer none --out DIR   (ours only: two trees'
        pages, each saved from its own tree, then compared with --raw)

For each case, one call of ours and one of the peer's (kernel_times.py's child: the same
inputs as `mla-cupy bench`, one warm-up call first) run under `ncu --set full` with the
GPU's own clocks; only the kernels inside the child's NVTX range of the timed call are
profiled (the decode and the combine, not the inputs' generators).  Printed per kernel:
time, clock, instructions, IPC, issue activity, tensor-pipe activity, memory throughput,
registers and shared memory, and the stall reasons per issued instruction: what a row's
gap is made of (more instructions, idle tensor pipe, or waiting on memory), where the
per-kernel times of kernel_times.py only say how large it is.  The raw pages are written to
DIR/CASE_{ours,PEER}.csv.gz for later reading with --raw.
"""
from __future__ import annotations

import argparse
import csv
import gzip
import io
import os
import re
import subprocess
import sys

HERE = os.path.dirname(os.path.abspath(__file__))
# Raw metric names (ncu --page raw) worth reading side by side; a pattern that matches
# nothing on this ncu version is simply absent from the table.
PATTERNS = [
    r"^gpu__time_duration\.sum$",
    r"^sm__cycles_elapsed\.avg\.per_second$",
    r"^launch__(grid_size|block_size|registers_per_thread|shared_mem_per_block_dynamic|occupancy_limit_shared_mem)$",
    r"^smsp__inst_executed\.sum$",
    r"^sm__inst_executed\.avg\.per_cycle_active$",
    r"^sm__instruction_throughput\.avg\.pct_of_peak_sustained_active$",
    r"^smsp__issue_active\.avg\.pct_of_peak_sustained_active$",
    r"^sm__pipe_tensor_op_gmma_cycles_active\.avg\.pct_of_peak_sustained_active$",
    r"^sm__inst_executed_pipe_tensor_op_gmma\.sum$",
    r"^sm__pipe_(alu|fma|fmaheavy|xu|shared)_cycles_active\.avg\.pct_of_peak_sustained_active$",
    r"^sm__throughput\.avg\.pct_of_peak_sustained_elapsed$",
    r"^gpu__compute_memory_throughput\.avg\.pct_of_peak_sustained_elapsed$",
    r"^dram__throughput\.avg\.pct_of_peak_sustained_elapsed$",
    r"^dram__bytes_read\.sum$",
    r"^lts__t_(sectors|requests)(_srcunit_tex)?_op_read\.sum$",
    r"^l1tex__m_xbar2l1tex_read_(bytes|sectors)\.sum$",
    r"^l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_(ld|st)\.sum$",
    r"^lts__t_sector_hit_rate\.pct$",
    r"^l1tex__data_bank_conflicts_pipe_lsu_mem_shared\.sum$",
    r"^smsp__average_warps_issue_stalled_[a-z_]+_per_issue_active\.ratio$",
]


def read_raw(text: str) -> list[dict]:
    """Rows of `ncu -i REP --page raw --csv`: one dict per kernel (name -> value text)."""
    rows = list(csv.reader(io.StringIO(text)))
    start = next((i for i, r in enumerate(rows) if "Kernel Name" in r), None)
    if start is None:
        return []
    head = rows[start]
    # the line after the header gives units; kernels follow
    body = [r for r in rows[start + 1:] if len(r) == len(head) and r[head.index("Kernel Name")]
            and not r[head.index("ID")] == ""]
    return [dict(zip(head, r)) for r in body if r[head.index("ID")].strip().isdigit()]


def picked(kernel: dict) -> dict[str, str]:
    out = {}
    for pat in PATTERNS:
        for name in kernel:
            if re.search(pat, name) and name not in out:
                out[name] = kernel[name]
    return out


def short_name(kernel: dict) -> str:
    name = kernel.get("Kernel Name", "?").split("(")[0]
    return name.replace("void ", "")[:48]


def side_by_side(label_a: str, kernels_a: list[dict], label_b: str, kernels_b: list[dict]) -> list[str]:
    """One table: a column per kernel of each side, a line per metric either side has."""
    cols = [(f"{label_a}:{short_name(k)}", picked(k)) for k in kernels_a] + \
           [(f"{label_b}:{short_name(k)}", picked(k)) for k in kernels_b]
    names = []
    for _, m in cols:
        names += [n for n in m if n not in names]
    short = lambda n: (n.replace("smsp__average_warps_issue_stalled_", "stall ")
                        .replace("_per_issue_active.ratio", "").replace(".avg.pct_of_peak_sustained_active", " %act")
                        .replace(".avg.pct_of_peak_sustained_elapsed", " %el"))
    lines = ["kernels: " + " | ".join(f"[{i}] {c}" for i, (c, _) in enumerate(cols))]
    lines.append(f"{'metric':58s}" + "".join(f"{'[' + str(i) + ']':>16s}" for i in range(len(cols))))
    for n in names:
        lines.append(f"{short(n)[:58]:58s}" + "".join(f"{m.get(n, '-')[:15]:>16s}" for _, m in cols))
    return lines


def profile(case: str, peer: str | None, rep: str) -> str:
    cmd = ["ncu", "--clock-control", "none", "--set", "full", "-f", "-o", rep,
           "--nvtx", "--nvtx-include", "timed_call/",
           sys.executable, os.path.join(HERE, "kernel_times.py"), "--child", case, "--calls", "1"]
    if peer:
        cmd += ["--peer", peer]
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        raise RuntimeError(f"ncu exit {done.returncode}: {(done.stdout + done.stderr)[-2000:]}")
    page = subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", "raw", "--csv"],
                          check=True, capture_output=True, text=True)
    return page.stdout


def main(argv=None) -> int:
    ap = argparse.ArgumentParser(prog="tools/ncu_compare.py", description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", metavar="CASE")
    ap.add_argument("--peer", default="flashmla")
    ap.add_argument("--out", default="/tmp/ncu_compare")
    ap.add_argument("--raw", nargs=2, metavar=("OURS_CSV", "PEER_CSV"), help="compare saved raw pages")
    a = ap.parse_args(argv)
    if a.raw:
        texts = []
        for path in a.raw:
            with (gzip.open if path.endswith(".gz") else open)(path, "rt") as f:
                texts.append(f.read())
        print("\n".join(side_by_side("ours", read_raw(texts[0]), a.peer, read_raw(texts[1]))))
        return 0
    sys.path.insert(0, HERE)
    from kernel_times import check_arguments
    check_arguments(a.cases, None if a.peer == "none" else a.peer)
    os.makedirs(a.out, exist_ok=True)
    for name in a.cases:
        texts = {}
        sides = (("ours", None),) if a.peer == "none" else (("ours", None), (a.peer, a.peer))
        for side, peer in sides:
            try:
                texts[side] = profile(name, peer, os.path.join(a.out, f"{name}_{side}"))
            except RuntimeError as e:
                print(f"{name} {side}: {e}", flush=True)
                continue
            with gzip.open(os.path.join(a.out, f"{name}_{side}.csv.gz"), "wt") as f:
                f.write(texts[side])
        if len(texts) == 2:
            print(f"== {name}\n" + "\n".join(side_by_side("ours", read_raw(texts["ours"]),
                                                            a.peer, read_raw(texts[a.peer]))), flush=True)
    return 0


if __name__ == "__main__":
    sys.exit(main())
