"""Check the Hopper (wgmma) decode family against the reference: the first
thing to run after a change to kernels/hopper/.

Usage (GPU machine, from the checkout):
    PYTHONPATH=. python3 tools/hopper_check.py [--quick] [--schedule ring|seesaw|narrow|pair] [--case N]

A case that crashes (a kernel fault) is named on stderr (CRASH ...); rerun it alone with
the seed the run printed: MLA_CUPY_SEED=<seed> ... --schedule S --case N.

Each schedule (variants.Schedule, forced through MLA_CUPY_HOPPER_SCHEDULE; all
by default) runs the whole list (narrow: its row groups of 32 rows at most).

Random dense cases (ragged lengths, every mask, page sizes 1..128, D_qk 576/512,
bf16/fp16, H 1..128, sinks, num_partitions 1 and 2..8) and sparse ones (-1 and
garbage indices, topk_lengths, logical_indices, the extra stream, fold), forced
onto the Hopper kernels, outputs NaN-filled before the launch, NaN in unused cache slots,
permuted tables; each compared with the NumPy reference.  Time it afterwards
with `mla-cupy bench` (MLA_CUPY_BACKEND=portable for the portable family on the
same shapes).  The timing logs of 2026-11-30 in tools/results/ came from an
earlier version of this script that also timed both families (CUDA graph
replays, 512 MiB L2 flush, median of 30; see git history, commit 219b06f).
"""
from __future__ import annotations

import argparse
import os
import sys
import time

import numpy as np

sys.path.insert(0, os.path.dirname(os.path.dirname(os.path.abspath(__file__))))
from mla_cupy import environment  # noqa: E402


def run_check(label: str, case, p) -> object:
    """testing.check_case, naming the case on stderr if it raises: a kernel fault
    (misaligned address, illegal address) surfaces at the next copy and leaves the
    context unusable, so the run stops there and this line says which case it was."""
    from mla_cupy import testing
    try:
        cmp, *_ = testing.check_case(case, num_partitions=p)   # with lse and lse=None
    except Exception as e:
        print(f"CRASH {label} P={p} {case.describe()}: {type(e).__name__}: {e}", file=sys.stderr, flush=True)
        raise
    return cmp


def correctness(quick: bool, schedule: str, only: int | None = None) -> int:
    from mla_cupy import testing
    seed = int(environment.get(environment.SEED) or np.random.SeedSequence().entropy % 2**32)
    rng = np.random.default_rng(seed)
    print(f"schedule {schedule} seed {seed}")
    os.environ[environment.HOPPER_SCHEDULE] = schedule
    cases = []
    # The seesaw and narrow load by TMA only: page sizes that fit boxes (tensor_map.box_rows).
    tma_only = schedule in ("seesaw", "narrow")
    pages = (8, 16, 32, 64, 128) if tma_only else (1, 3, 16, 64, 128)
    for page in pages:
        for mask in ("causal", "null", "sliding_window_causal"):
            cases.append(dict(page_size=page, mask=mask))
    # ragged batches whose long sequence takes most of the balanced splits (ring: 64 heads)
    cases += [dict(num_heads=128, seq_lens=[1, 1, 2, 1], cache_lens=[30000, 5, 700, 2000]),
              dict(num_heads=64, seq_lens=[1, 1, 1, 1, 1], cache_lens=[100, 25000, 3, 0, 4000])]
    cases += [dict(d_qk=512), dict(dtype=np.float16), dict(num_heads=128), dict(num_heads=1),
              dict(num_heads=20, seq_lens=[3, 1, 4, 2]), dict(num_heads=64, seq_lens=[1, 2]),
              dict(sink="random"), dict(num_heads=128, seq_lens=[2, 1], mask="null"),
              dict(dtype=np.float16, d_qk=512, mask="sliding_window_causal"),
              dict(layout="fp8_ds_mla"), dict(layout="fp8_ds_mla", num_heads=128, page_size=64),
              dict(layout="fp8_ds_mla", mask="sliding_window_causal", sink="random"),
              dict(layout="fp8"), dict(layout="fp8", num_heads=128, page_size=64, sink="random"),
              dict(layout="fp8", d_qk=512, mask="sliding_window_causal"),
              dict(layout="fp8_ds_mla", num_heads=1), dict(layout="fp8", num_heads=4, page_size=3)]
    if schedule == "pair":   # sparse fp8_ds_mla in whole pairs of 64-row tiles only
        cases = []
    fails = 0
    for i, kw in enumerate(cases[: 8 if quick else None]):
        kw = dict(kw)
        n = int(rng.integers(1, 6))
        seq_lens = kw.pop("seq_lens", list(rng.integers(1, 4, size=n)))
        cache_lens = kw.pop("cache_lens", None)
        if cache_lens is None:
            cache_lens = list(rng.integers(0, 3000, size=len(seq_lens)))
            cache_lens[0] = 0 if len(seq_lens) > 2 else cache_lens[0]
        mask = kw.pop("mask", "causal")
        window = int(rng.integers(1, 1500)) if mask == "sliding_window_causal" else -1
        kw.setdefault("num_heads", int(rng.choice([16, 32, 128])))
        if schedule == "narrow":   # row groups of at most 32 rows (else the ring runs)
            kw["num_heads"] = min(kw["num_heads"], 32)
            seq_lens = [min(s, 32 // kw["num_heads"]) for s in seq_lens]
        kw.setdefault("sink", "random" if rng.random() < 0.3 else None)
        case = testing.make_case(rng, seq_lens=seq_lens, cache_lens=cache_lens, mask=mask,
                                 window=window, **kw)
        # P None: the dispatcher's split (the narrow kernel: equal shares, segment mode)
        for p in (None, 1, int(rng.integers(2, 9))):
            if only is not None and i != only:   # (every case drawn: the seed replays)
                continue
            cmp = run_check(f"case {i}", case, p)
            fails += not cmp.ok
            print(f"{'PASS' if cmp.ok else 'FAIL'} case {i} P={p} {case.describe()}: {cmp.message}",
                  flush=True)
    sparse_cases = [dict(), dict(mask="null"), dict(logical=True), dict(topk="random"),
                    dict(extra_stride=40, extra_topk="random"), dict(fold=True),
                    dict(fold=True, extra_stride=24, logical=True), dict(dtype=np.float16, d_qk=512),
                    dict(num_heads=128, seq_lens=[2, 1]), dict(num_heads=64, sink="random"),
                    dict(layout="fp8_ds_mla", num_heads=128), dict(layout="fp8_ds_mla", fold=True),
                    dict(layout="fp8_ds_mla", num_heads=64, extra_stride=40, logical=True),
                    dict(layout="fp8", num_heads=128, topk="random"), dict(layout="fp8", fold=True),
                    dict(num_heads=4), dict(layout="fp8_ds_mla", num_heads=1, sink="random"),
                    dict(layout="fp8", num_heads=8, mask="null")]
    if schedule == "pair":   # unfolded fp8_ds_mla, 128 heads (the clusters' row groups; 128 at most)
        sparse_cases = [dict(num_heads=128), dict(num_heads=128, mask="null", sink="random"),
                        dict(num_heads=128, logical=True, topk="random"),
                        dict(num_heads=128, extra_stride=40, extra_topk="random", logical=True),
                        dict(num_heads=128, seq_lens=[3, 1, 2], extra_stride=70),
                        dict(num_heads=128, topk="random", mask="null", seq_lens=[1, 1, 1, 1, 1, 1])]
        for kw in sparse_cases:
            kw["layout"] = "fp8_ds_mla"
    # (the seesaw covers dense 16-bit caches only: sparse cases run the ring either way;
    # the narrow kernel covers sparse fp8 layouts at 16 rows or fewer)
    for i, kw in enumerate(sparse_cases[: 0 if schedule == "seesaw" else 5 if quick else None]):
        kw = dict(kw)
        n = int(rng.integers(1, 5))
        seq_lens = kw.pop("seq_lens", list(rng.integers(1, 4, size=n)))
        cache_lens = list(rng.integers(0, 3000, size=len(seq_lens)))
        kw.setdefault("num_heads", int(rng.choice([16, 32, 128])))
        if schedule == "narrow":   # row groups of at most 32 rows (else the ring runs)
            kw["num_heads"] = min(kw["num_heads"], 32)
            if kw.get("fold"):
                seq_lens = [min(s, 32 // kw["num_heads"]) for s in seq_lens]
        kw.setdefault("sink", "random" if rng.random() < 0.3 else None)
        stride = int(rng.choice([1, 37, 128, 700, 2048]))
        case = testing.make_sparse_case(rng, seq_lens=seq_lens, cache_lens=cache_lens,
                                        indices_stride=stride, page_size=int(rng.choice([1, 16, 64])),
                                        **kw)
        # the pair: also its grid for a device of two SMs (one z: a CTA runs every job)
        for sms in (None, 2) if schedule == "pair" else (None,):
            for p in (1, int(rng.integers(2, 9))):
                if only is not None:                 # --case names a dense case
                    continue
                with testing.grid_for_sms(sms):
                    cmp = run_check(f"sparse case {i}", case, p)
                fails += not cmp.ok
                print(f"{'PASS' if cmp.ok else 'FAIL'} sparse case {i} P={p} stride={stride}"
                      f"{f' sms={sms}' if sms else ''} {case.describe()}: {cmp.message}", flush=True)
    return fails


def main(argv=None) -> int:
    os.environ[environment.BACKEND] = "hopper"   # an error wherever the family would not run
    ap = argparse.ArgumentParser()
    ap.add_argument("--quick", action="store_true")
    ap.add_argument("--schedule", choices=("ring", "seesaw", "narrow", "pair"), action="append",
                    help="a schedule to check (repeatable; default all)")
    ap.add_argument("--case", type=int, help="run only this dense case (with MLA_CUPY_SEED: a replay)")
    a = ap.parse_args(argv)
    t0 = time.time()
    fails = sum(correctness(a.quick, s, a.case) for s in a.schedule or ("ring", "seesaw", "narrow", "pair"))
    print(f"correctness: {fails} failures ({time.time() - t0:.0f} s)", flush=True)
    return 1 if fails else 0


if __name__ == "__main__":
    sys.exit(main())
