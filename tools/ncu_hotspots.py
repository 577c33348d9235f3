"""Where a kernel's warps wait, by SASS instruction, from Nsight Compute.

Runs ``ncu`` (clocks left alone) on one launch of the named kernel inside a
bench case, exports the report's source page as CSV and prints:
* the kernel's stall samples summed by reason;
* the instructions with the most samples, each with its SASS, its share of all
  samples and its largest reasons.
A warp-specialised kernel shows each warpgroup's waits on its own instructions
(the producer's loads and mbarrier waits, the math warpgroups' named barriers
and wgmma waits), which is what the per-kernel stall ratios cannot separate.

    PYTHONPATH=. python3 tools/ncu_hotspots.py CASE KERNEL_REGEX [--top 40] [--out DIR]
"""
import argparse
import csv
import io
import os
import subprocess
import sys


def run_ncu(case, kernel, out_dir, extra):
    rep = os.path.join(out_dir, "hotspots")
    cmd = ["ncu", "--clock-control", "none", "-f", "-o", rep, "-k", f"regex:{kernel}",
           "--launch-skip", "3", "--launch-count", "1",
           "--section", "WarpStateStats", "--section", "SourceCounters",
           sys.executable, "tools/bench.py", case, "--repeats", "20", "--check-seqs", "1", *extra]
    subprocess.run(cmd, check=True, stdout=subprocess.DEVNULL)
    page = subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", "source", "--csv",
                           "--print-source", "sass"], check=True, capture_output=True, text=True)
    return page.stdout


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def report(csv_text, top):
    rows = list(csv.reader(io.StringIO(csv_text)))
    start = next(i for i, r in enumerate(rows) if any("Source" == c for c in r))
    head, body = rows[start], [r for r in rows[start + 1:] if len(r) == len(rows[start])]
    col = {name: i for i, name in enumerate(head)}
    total_name = next(n for n in head if n.startswith("Warp Stall Sampling (All"))
    reasons = [n for n in head if n.startswith("stall_") or n.startswith("smsp__pcsamp_warps_issue_stalled")]
    total = sum(number(r[col[total_name]]) for r in body) or 1.0
    print(f"{len(body)} SASS instructions, {total:.0f} samples ({total_name})")
    if reasons:
        sums = sorted(((sum(number(r[col[n]]) for r in body), n) for n in reasons), reverse=True)
        print("by reason: " + ", ".join(f"{n.replace('smsp__pcsamp_warps_issue_stalled_', '')} "
                                         f"{100 * s / total:.1f}%" for s, n in sums[:12] if s > 0))
    body.sort(key=lambda r: -number(r[col[total_name]]))
    for r in body[:top]:
        s = number(r[col[total_name]])
        why = sorted(((number(r[col[n]]), n) for n in reasons), reverse=True)[:3]
        why = ", ".join(f"{n.replace('smsp__pcsamp_warps_issue_stalled_', '')} {v:.0f}" for v, n in why if v > 0)
        print(f"{r[col['Address']] if 'Address' in col else '?':>8} {100 * s / total:5.1f}%  "
              f"{r[col['Source']].strip()[:70]:70s}  {why}")


def main():
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("case", help="bench case name (tools/bench.py --list)")
    p.add_argument("kernel", help="regex of the kernel's name")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--out", default="/tmp", help="where the .ncu-rep and the CSV go")
    args, extra = p.parse_known_args()
    text = run_ncu(args.case, args.kernel, args.out, extra)
    with open(os.path.join(args.out, "hotspots_source.csv"), "w") as f:
        f.write(text)
    report(text, args.top)


if __name__ == "__main__":
    main()
