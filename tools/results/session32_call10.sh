#!/usr/bin/env bash
# Session 32, call 10 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session32_call10.sh
# HEAD with 17-32-row bf16/fp16 groups on the ring: the dense GPU file (the ring at 32 rows
# under auto, the forced narrow 32-row tile in segment mode), then the 32-row rows beside
# the peers.  Prediction: all pass; DeepSeek h32 uniform ~167 (0.92 -> ~0.97 against
# FlashInfer's 163), ragged ~188 (0.94 -> ~0.96 against FlashMLA's 181).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=200 gpu_files head dense
(timeout 150 bash tools/gpu_bench.sh ds_h32_sq1_ragged ds_h32_sq1_uniform ds_h16_sq2_ragged ds_h16_sq2_uniform \
  --repeats 20 > /dev/null 2>&1); say "peer bench $?"
cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote" >> "$L"
cat "$L"
