#!/usr/bin/env bash
# Session 38, call 4 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session38_call4.sh
# The landed tree (the `_multicast` twin with its floor, 718e829; later commits touch only
# tools/results): hopper_check seesaw, the dense GPU file, the sparse memcheck.  Then balanced
# mode's grid factor on DeepSeek h128 ragged (the one row where balanced mode runs the twin:
# each sequence in BALANCED_GRID_FACTOR x P even splits; 2 is the default, 256 CTAs in two
# waves).  Prediction: 3 and 4 within +-2% of 2 (finer pieces balance the second wave but add
# a CTA's fixed cost, ~12 us, per extra piece); if 3 wins by > 2%, the factor is the next
# change.  Then every README row beside the peers.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
check_tree . final seesaw
GPU_FILE_TIMEOUT=280 gpu_files final dense
memcheck_sparse final
for f in 2 3 4; do
  echo "== balanced grid factor $f" >> "$L"
  PYTHONPATH=. timeout 60 python3 -c "
import sys
import mla_cupy.dispatch as d
d.BALANCED_GRID_FACTOR = $f
from mla_cupy import bench
import argparse
ap = argparse.ArgumentParser(); bench.add_arguments(ap)
sys.exit(bench.main(ap.parse_args(['ds_h128_sq1_ragged', '--repeats', '20', '--check-seqs', '2'])))
" 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
done
say "factors"
COMMIT=718e829 PEER_TIMEOUT=260 peer_all_rows
cat "$L"
