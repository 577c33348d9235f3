#!/usr/bin/env bash
# Session 32, call 2 (device, repository root):  OUT=$OUT bash tools/results/session32_call2.sh
# next_narrow_alternate.patch: the 32-row narrow tile over 16-bit caches as two math
#    warpgroups of all 32 rows taking alternate tiles (wgmma N = 32; each tile read from
#    shared memory once, not twice), merged at a segment's end.  Checks: hopper_check
#    narrow, the dense file.  Prediction: all pass; DeepSeek h32 uniform ~176 -> ~163 us
#    (h16's), ragged ~192 -> ~182, h16 s_q2 likewise; h16 s_q1 unchanged (its SASS is HEAD's).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=170 checked_patch /tmp/alt next_narrow_alternate.patch alt narrow dense
C="ds_h32_sq1_uniform ds_h32_sq1_ragged ds_h16_sq2_uniform ds_h16_sq2_ragged ds_h16_sq1_uniform" BENCH_TIMEOUT=80 \
  bench_trees . /tmp/alt
cat "$L"
