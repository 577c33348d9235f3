#!/usr/bin/env bash
# Session 32, call 1 (device, repository root):  OUT=$OUT bash tools/results/session32_call1.sh
# 1. HEAD (16963e0's host path, not yet run on the GPU): the schedule test with its new fp8
#    ring cases (fp8_ds_mla causal, fp8 windowed at 64 heads), the sparse and fp8 files.
#    Prediction: all pass.
# 2. What the 32-row narrow tile's second math warpgroup costs: DeepSeek h32 with warpgroup 1's
#    MMAs removed (producer_ceiling --keep-mma --ablate wg1nomma; garbage output, timed only),
#    beside h16 on the same lengths.  Prediction, if the row split's doubled operand reads
#    bound the tile (2.5 us a tile against 2.25 at 16 rows): h32 uniform ~176 -> ~162 (h16's).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py -k schedule \
  > /tmp/t_sched.log 2>&1; say "schedule tests exit $?: $(tail -1 /tmp/t_sched.log)"
cp /tmp/t_sched.log "$OUT/gpu_head_schedule.log"
GPU_FILE_TIMEOUT=60 gpu_files head sparse fp8
PYTHONPATH=.:tests timeout 200 python3 tools/producer_ceiling.py ds_h32_sq1_uniform ds_h32_sq1_ragged ds_h16_sq1_uniform \
  --keep-mma --ablate wg1nomma >> "$L" 2>&1
say "ceiling $?"
cat "$L"
