#!/usr/bin/env bash
# Session 16, call 6.  Call 5: test_checked_mode_random_corruptions_match_the_numpy_rules
# failed at 14f3527 with MLA_CUPY_SEED=4710371379438756716 (trial 2: a sparse case, P=3,
# extra_d_indices[20] = -1; token 0's rows never written: NaN).  Is it the new combine
# (replay at HEAD and at b9b856f, the CTA-a-row combine) or older (also portable forced)?
# Then: how much do ragged h64/h128 rows lose to the split rule (P=2 cut by the longest
# sequence)?  tools/split_sweep.py at forced P.
# Usage (device, repository root, .bisect carried): OUT=$OUT bash tools/results/session16_call6.sh
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say
T=tests/test_gpu_hardening.py::test_checked_mode_random_corruptions_match_the_numpy_rules
rep() { MLA_CUPY_SEED=4710371379438756716 PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider $T 2>&1 | tail -1; }
echo "HEAD: $(rep)" >> "$L"; say replay
echo "b9b856f: $(cd .bisect/b9b856f && rep)" >> "$L"; say replay
echo "HEAD portable: $(MLA_CUPY_BACKEND=portable rep)" >> "$L"; say replay
for i in 1 2 3; do echo "HEAD fresh seed: $(PYTHONPATH=.:tests timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider $T 2>&1 | grep -E "passed|failed|SEED" | tail -2 | tr '\n' ' ')" >> "$L"; done; say fresh
PYTHONPATH=. timeout 200 python3 tools/split_sweep.py ds_h64_sq1_ragged:2,4,6 ds_h128_sq1_ragged:1,2,4 ds_h64_sq1_uniform:2,4 \
  2>&1 | grep -v "^#" | cut -c1-120 >> "$L"; say "split_sweep"
cat "$L"
