#!/usr/bin/env bash
# Session 31, call 4 (device, repository root, .whl carried):
#   OUT=$OUT COMMIT=<commit> bash tools/results/session31_call4.sh
# 1. The forced-portable GPU files (MLA_CUPY_BACKEND=portable; the decode ABI gained
#    schedule and schedule_mode, which the portable kernels take and ignore): dense,
#    sparse, fp8 in parallel.  Prediction: all pass (77-88 / 24-31 / 11-12).
# 2. Every README row beside the peers, ours with the step's DecodeSchedule (the bench's
#    default).  Prediction: the rows of calls 2-3 within their noise; sparse rows as at
#    fd325af (no records there).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PORTABLE_TIMEOUT=200 portable dense sparse fp8
say "portable files"
PEER_TIMEOUT=$((570 - SECONDS + T0)) peer_all_rows
cat "$L"
