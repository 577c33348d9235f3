#!/usr/bin/env bash
# Session 34, call 1 (prepared in session 33; device, repository root, .whl carried):
#   OUT=$OUT COMMIT=<HEAD> bash tools/results/next_session34_call1.sh
# Session 33 made segment mode the ring's default for batches of two or more (75e8966) with
# the device budget spent: its last calls ran the kernel under MLA_CUPY_SPLIT=segments only.
# 1. The dense, sparse, fp8, hardening and host GPU files on HEAD (test_balanced_splits'
#    ring batches, the 64-head schedule test and any 17-64-row batch of two or more now in
#    segment mode; the ring's sparse / fp8 variants' SASS changed with the segment loop's
#    skeleton).  Prediction: all pass.  ~8 minutes.
# 2. hopper_check --schedule ring.  Prediction: 0 failures.
# (next_session34_call2.sh: the ring's sparse / fp8 rows against the session start's
# template, then every README row beside the peers.)
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=200 gpu_files head dense
GPU_FILE_TIMEOUT=90 gpu_files head sparse fp8 hardening host
(PYTHONPATH=. timeout 90 python3 tools/hopper_check.py --schedule ring > "$OUT/check_ring.txt" 2>&1)
say "check ring exit $?: $(grep -h 'correctness' "$OUT/check_ring.txt")"
cat "$L"
