"""One variant family's sanitizer case compiled with -lineinfo, for a racecheck
report that names source lines (tools/racecheck_arrive_probe.py says how to
read them).  Prints the family's check and the variants it compiled.

    compute-sanitizer --tool racecheck --racecheck-report hazard --print-limit 1000000 \\
        --show-backtrace no python3 tools/racecheck_sites.py dense_bf16_causal/hopper 2>&1 \\
      | grep -oE "(Write|Read) Thread \\([0-9]+,0,0\\) at .*\\.cu:[0-9]+" \\
      | awk '{split($3,t,"[(,]"); n=split($NF,a,":"); print $1, (t[2]<128?"wg0":"wg1"), "line", a[n]}' \\
      | sort | uniq -c

The lines are those of `mla-cupy render VARIANT` (the rendered source).
"""
import sys

import numpy as np

import cupy

from mla_cupy import compiler
from mla_cupy.sanitize_cases import family_items
from mla_cupy.testing import check_case

if len(sys.argv) != 2:
    sys.exit("usage: racecheck_sites.py FAMILY (a family name of tools/sanitize_cases.py, e.g. "
             "dense_bf16_causal/hopper)")
compiler.BASE_OPTIONS = (*compiler.BASE_OPTIONS, "-lineinfo")
cupy.cuda.set_allocator(None)
items = [i for i in family_items(np.random.default_rng(2026), quick=True, hopper=True)
         if i.family == sys.argv[1]]
if not items:
    sys.exit(f"no family {sys.argv[1]!r}")
cmp, *_ = check_case(items[0].case, num_partitions=1, **items[0].decode_kwargs)
print(items[0].family, cmp.ok, cmp.message, flush=True)
for name, _ in list(compiler._memo):
    print("variant", name)
