#!/usr/bin/env bash
# Session 29 call 5 (device, repository root): OUT=$OUT bash tools/results/session29_call5.sh
# 1. The fp8 test file on HEAD, with the new test_fp8_ds_mla_group_scales_near_the_narrow_kernels_limit
#    (group scales in [128, 255.875] on the narrow m16 kernel).  Prediction: 12 passed.
# 2. Can that construction fail?  The same case with scales in [2048, 4096] (out of contract):
#    prediction: non-finite outputs or errors far past the tolerance on the narrow kernel.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
L="$OUT/log.txt"; T0=$SECONDS
GPU_FILE_TIMEOUT=150 gpu_files HEAD fp8
echo "== out-of-contract scales" >> "$L"
PYTHONPATH=. timeout 100 python3 - >> "$L" 2>&1 <<'PY'
import dataclasses
import numpy as np
from mla_cupy import records
from mla_cupy.testing import check_against_reference, make_case
for lo, hi in ((128.0, 255.875), (2048.0, 4096.0)):
    rng = np.random.default_rng(7)
    case = make_case(rng, seq_lens=[1, 2], cache_lens=[700, 1500], num_heads=16, layout="fp8_ds_mla",
                     sink="random", scale=1e-5)
    blocks = case.blocks.copy()
    at = records.scales_at("fp8_ds_mla")
    scales = blocks[..., at:at + 16].view(np.float32)
    live = (blocks[..., 0] & 0x7F) != 0x7F
    scales[live] = rng.uniform(lo, hi, size=scales.shape).astype(np.float32)[live]
    case = dataclasses.replace(case, blocks=blocks)
    try:
        check_against_reference(case, num_partitions=1)
        print(f"scales [{lo}, {hi}]: matches the reference")
    except AssertionError as e:
        print(f"scales [{lo}, {hi}]: FAILS: {str(e)[-300:]}")
PY
say "probe"
cat "$L"
