#!/usr/bin/env bash
# Prepared in session 29 for session 30's first call (not run).  Device, repository root:
#   OUT=$OUT bash tools/results/next_session30_call1.sh
# 1. The fp8 test file on HEAD, the cache warmed first (session 29's call 5 timed out compiling):
#    test_fp8_ds_mla_group_scales_near_the_narrow_kernels_limit is new (the worst case at the
#    bound g = 255.875, two_level_ds_mla_case, then random scales).  Prediction: 12 passed.
# 2. The same construction out of contract (g = 4096; P x g ~ 10^6 in fp16) on the narrow
#    kernel: prediction: it fails (inf or NaN): the evidence that the test can fail.
# 3. The sparse and dense files and memcheck on HEAD (session 29 landed the sparse routing by
#    keys a split: sparse 31 and fp8 11 passed on its tree; dense not run since call 1).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=90 gpu_files HEAD fp8
echo "== the worst case out of contract" >> "$L"
PYTHONPATH=. timeout 100 python3 - >> "$L" 2>&1 <<'PY'
import numpy as np
from mla_cupy.testing import check_against_reference, two_level_ds_mla_case
for g in (255.875, 4096.0):
    try:
        out = check_against_reference(two_level_ds_mla_case(np.random.default_rng(0), g), num_partitions=1)[0]
        print(f"g = {g}: matches the reference")
    except AssertionError as e:
        print(f"g = {g}: FAILS: {str(e)[-300:]}")
PY
say "worst case"
GPU_FILE_TIMEOUT=200 gpu_files HEAD sparse dense
memcheck_sparse HEAD
cat "$L"
