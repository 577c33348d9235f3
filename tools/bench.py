"""``mla-cupy bench`` from a checkout (the module is mla_cupy/bench.py).

Usage:  PYTHONPATH=. python3 tools/bench.py [CASE ...] [--suite default] [--peer flashmla]
        [--peer flashinfer] [--json FILE] [--plot FILE.png] [--commit SHA] ...
        PYTHONPATH=. python3 tools/bench.py --list
On the GPU machine with the peers' wheels: tools/gpu_bench.sh.
"""
import argparse
import sys

from mla_cupy import bench

ap = argparse.ArgumentParser(prog="tools/bench.py", description=bench.__doc__.splitlines()[0])
bench.add_arguments(ap)
sys.exit(bench.main(ap.parse_args()))
