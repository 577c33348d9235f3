"""Where a kernel's warps wait, by SASS instruction, from Nsight Compute.

Runs ``ncu`` (clocks left alone) on one launch of the named kernel in a call of a
bench case (kernel_times.py's child process), exports the report's source page as
CSV and prints:
* the kernel's stall samples summed by reason, and by opcode;
* the instructions with the most samples, each with its SASS, its share of all
  samples and its largest reasons.
A warp-specialised kernel shows each warpgroup's waits on its own instructions
(the producer's loads and mbarrier waits, the math warpgroups' named barriers
and wgmma waits), which is what the per-kernel stall ratios cannot separate.

    PYTHONPATH=. python3 tools/ncu_hotspots.py CASE KERNEL_REGEX [--top 40] [--out DIR] [--peer NAME]
        [--ablate strip|strip+noload+noconvert|...]   (our kernel rebuilt as producer_ceiling.py ablates it)
    python3 tools/ncu_hotspots.py - - --csv hotspots_source.csv.gz     (a saved CSV, no GPU)
"""
import argparse
import csv
import gzip
import io
import os
import subprocess
import sys


def run_ncu(case, kernel, out_dir, peer=None, ablate=None):
    rep = os.path.join(out_dir, "hotspots")
    # The calls of kernel_times.py's child (one warm-up, then synchronised calls), not
    # bench.py: the bench's head-of-queue spin kernel waits seconds under ncu.
    cmd = ["ncu", "--clock-control", "none", "-f", "-o", rep, "-k", f"regex:{kernel}",
           "--launch-skip", "2" if ablate else "1", "--launch-count", "1",   # past the warm-ups
           "--section", "WarpStateStats", "--section", "SourceCounters",
           sys.executable, os.path.join(os.path.dirname(os.path.abspath(__file__)), "kernel_times.py"),
           "--child", case, "--calls", "2"] + (["--peer", peer] if peer else []) \
        + (["--ablate", ablate] if ablate else [])
    os.makedirs(out_dir, exist_ok=True)   # ncu -o does not create it
    done = subprocess.run(cmd, capture_output=True, text=True)
    if done.returncode != 0:
        sys.exit(f"ncu exit {done.returncode}:\n{(done.stdout + done.stderr)[-3000:]}")
    page = subprocess.run(["ncu", "-i", rep + ".ncu-rep", "--page", "source", "--csv",
                           "--print-source", "sass"], check=True, capture_output=True, text=True)
    return page.stdout


def number(text):
    try:
        return float(text.replace(",", ""))
    except ValueError:
        return 0.0


def opcode(sass):
    """The opcode of a SASS line without its predicate or modifiers: '@!P0 BRA 0x..' -> 'BRA',
    'HGMMA.64x16x16.F32.BF16 R88, ...' -> 'HGMMA'."""
    words = sass.split()
    if words and words[0].startswith("@"):
        words = words[1:]
    return words[0].split(".")[0] if words else "?"


def report(csv_text, top):
    rows = list(csv.reader(io.StringIO(csv_text)))
    start = next(i for i, r in enumerate(rows) if any("Source" == c for c in r))
    head, body = rows[start], [r for r in rows[start + 1:] if len(r) == len(rows[start])]
    col = {name: i for i, name in enumerate(head)}
    total_name = next(n for n in head if n.startswith("Warp Stall Sampling (All"))
    reasons = [n for n in head if (n.startswith("stall_") or n.startswith("smsp__pcsamp_warps_issue_stalled"))
               and "Not Issued" not in n]
    short = lambda n: n.replace("smsp__pcsamp_warps_issue_stalled_", "").replace("stall_", "")
    samples = [number(r[col[total_name]]) for r in body]
    total = sum(samples) or 1.0
    base = int(body[0][col["Address"]], 16) if "Address" in col else 0
    offset = lambda r: int(r[col["Address"]], 16) - base if "Address" in col else 0
    print(f"{len(body)} SASS instructions, {total:.0f} samples ({total_name})")

    def reasons_of(rs):
        sums = sorted(((sum(number(r[col[n]]) for r in rs), n) for n in reasons), reverse=True)
        t = sum(number(r[col[total_name]]) for r in rs) or 1.0
        return ", ".join(f"{short(n)} {100 * v / t:.0f}%" for v, n in sums[:6] if v > 0)

    print("by reason: " + reasons_of(body))
    # Regions: a warp-specialised kernel's warpgroups run disjoint code, each
    # entered at its setmaxnreg (USETMAXREG); offsets are from the kernel's
    # first instruction, as nvdisasm prints them for the same cubin.
    cuts = [(0, "prologue")] + [(offset(r), r[col["Source"]].strip()[:40]) for r in body
                                if "USETMAXREG" in r[col["Source"]]]
    if len(cuts) > 1:
        print("by region (from each USETMAXREG; a region runs to the next):")
        for k, (at, name) in enumerate(cuts):
            end = cuts[k + 1][0] if k + 1 < len(cuts) else float("inf")
            rs = [r for r in body if at <= offset(r) < end]
            share = sum(number(r[col[total_name]]) for r in rs) / total
            print(f"  {at:6x} {name:40s} {100 * share:5.1f}%  {reasons_of(rs)}")
    # By opcode: where a kernel's issue time goes by instruction kind (R2UR feeding the
    # HGMMAs was a quarter of the 32-row narrow tile's samples in session 15).
    by_op = {}
    for r, n in zip(body, samples):
        op = opcode(r[col["Source"]])
        count, summed = by_op.get(op, (0, 0.0))
        by_op[op] = (count + 1, summed + n)
    ranked = sorted(by_op.items(), key=lambda kv: -kv[1][1])[:12]
    print("by opcode: " + ", ".join(f"{op} {100 * v / total:.1f}% ({k})" for op, (k, v) in ranked))
    order = sorted(range(len(body)), key=lambda i: -samples[i])
    for i in order[:top]:
        r = body[i]
        why = sorted(((number(r[col[n]]), n) for n in reasons), reverse=True)[:3]
        why = ", ".join(f"{short(n)} {v:.0f}" for v, n in why if v > 0)
        print(f"{offset(r):6x} {100 * samples[i] / total:5.1f}%  x{r[col['Instructions Executed']] if 'Instructions Executed' in col else '?':>8}  "
              f"{r[col['Source']].strip()[:64]:64s}  {why}")


def main(argv=None):
    p = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    p.add_argument("case", help="bench case name (tools/bench.py --list)")
    p.add_argument("kernel", help="regex of the kernel's name")
    p.add_argument("--top", type=int, default=40)
    p.add_argument("--out", default="/tmp", help="where the .ncu-rep and the CSV go")
    p.add_argument("--csv", help="report a saved source-page CSV (.gz too) instead of profiling (no GPU)")
    p.add_argument("--peer", help="profile this peer's call of the case instead of ours (flashmla, flashinfer)")
    p.add_argument("--ablate", help="profile our Hopper decode kernel rebuilt as tools/producer_ceiling.py "
                   "ablates it: 'strip' (no wgmma) and its ablations, '+'-joined")
    args = p.parse_args(argv)
    if args.csv:
        opener = gzip.open if args.csv.endswith(".gz") else open
        with opener(args.csv, "rt") as f:
            report(f.read(), args.top)
        return
    sys.path.insert(0, os.path.dirname(os.path.abspath(__file__)))
    import kernel_times
    kernel_times.check_arguments([args.case], args.peer)   # before ncu runs
    if args.ablate and args.peer:
        p.error("--ablate rebuilds our kernel: not with --peer")
    if args.ablate:
        import producer_ceiling
        try:
            producer_ceiling.parse_ablation(args.ablate)
        except ValueError as e:
            p.error(str(e))
    text = run_ncu(args.case, args.kernel, args.out, args.peer, args.ablate)
    with open(os.path.join(args.out, "hotspots_source.csv"), "w") as f:
        f.write(text)
    report(text, args.top)


if __name__ == "__main__":
    main()
