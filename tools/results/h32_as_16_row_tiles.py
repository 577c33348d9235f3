"""Session 32 experiment (device): DeepSeek h32 rows run as two 16-row narrow tiles a
sequence (split mode, grid x = 2) instead of one 32-row tile, by patching the narrow
schedule's rows a CTA to 16; the bench checks each case against the reference before
timing.  The two row tiles of a split read the same keys, adjacent in launch order, so
the second read should come from L2.

    PYTHONPATH=. python3 tools/results/h32_as_16_row_tiles.py CASE ... [bench options]
"""
import argparse
import sys

from mla_cupy import bench, compiler, variants

original = variants.schedule_tile_rows


def sixteen(schedule, group_rows=1):
    rows = original(schedule, group_rows)
    return 16 if rows == 32 else rows


compiler.schedule_tile_rows = sixteen
ap = argparse.ArgumentParser()
bench.add_arguments(ap)
rc = bench.main(ap.parse_args())
print("# decode kernels run:", sorted({k[0] for k in compiler._memo if k[0].startswith("mla_decode")}))
sys.exit(rc)
