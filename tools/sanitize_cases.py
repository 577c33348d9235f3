"""The workload tools/sanitize_all.py runs under each compute-sanitizer tool:
one small poisoned, adversarial case per variant family
(mla_cupy.sanitize_cases.family_items), each checked against the reference
with lse and with lse=None, at P = 1 and 3 (P = 3 only with --quick); then the
checked mode's kernel on a valid and on an invalid call (family checked_mode/portable).  Prints a line
``variant NAME`` for every kernel compiled, and ``sanitize cases: N variants,
M failures`` at the end (exit 1 on a failure).

    PYTHONPATH=. python3 tools/sanitize_cases.py [--quick] [--only SUBSTRING]
"""
import argparse
import sys

import numpy as np

import cupy

from mla_cupy import compiler
from mla_cupy.sanitize_cases import family_items
from mla_cupy.testing import check_case, run_gpu

ap = argparse.ArgumentParser()
ap.add_argument("--quick", action="store_true")
ap.add_argument("--only", default="", help="run the families whose name contains this")
args = ap.parse_args()

cupy.cuda.set_allocator(None)    # every array its own allocation: out-of-bounds lands outside
hopper = compiler.device_arch(cupy.cuda.runtime.getDevice()) == "sm_90a"
seen, failures = set(), 0


def report_variants():
    for name, _ in list(compiler._memo):
        if name not in seen:
            seen.add(name)
            print(f"variant {name}", flush=True)


for item in family_items(np.random.default_rng(2026), quick=args.quick, hopper=hopper):
    if args.only not in item.family:
        continue
    for p in ((3,) if args.quick else (1, 3)):
        try:
            cmp, *_ = check_case(item.case, num_partitions=p, **item.decode_kwargs)
            ok, text = cmp.ok, cmp.message
        except Exception as e:  # noqa: BLE001 - report and go on to the next family
            ok, text = False, f"{type(e).__name__}: {e}"
        failures += not ok
        print(f"{item.family} P={p}: {'PASS' if ok else 'FAIL ' + item.case.describe()} {text}", flush=True)
    report_variants()

# the checked mode's kernel: a clean call passes, a corrupted one raises.  A
# family of its own, on the portable decode, so that --only picks it like the others.
CHECKED_FAMILY = "checked_mode/portable"
if args.only in CHECKED_FAMILY:
    item = family_items(np.random.default_rng(7), quick=True)[0]   # dense: no garbage the checked mode refuses
    run_gpu(item.case, validate="full", backend="portable")
    item.case.cache_lengths[0] = 2**31 - 1
    try:
        run_gpu(item.case, validate="full", backend="portable")
        print(f"{CHECKED_FAMILY}: FAIL (a cache length of 2^31-1 passed)")
        failures += 1
    except ValueError as e:
        print(f"{CHECKED_FAMILY}: PASS ({e})")
report_variants()
print(f"sanitize cases: {len(seen)} variants, {failures} failures", flush=True)
sys.exit(1 if failures else 0)
