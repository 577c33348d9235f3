#!/usr/bin/env bash
# Session 31, call 2 (device, repository root, .whl carried):
#   OUT=$OUT COMMIT=<commit> bash tools/results/session31_call2.sh
# The DecodeSchedule (segment mode's shares written by a step's first call, read by
# the rest).  1. Its GPU test, segment mode and the graph tests, then the whole dense,
#    sparse and fp8 files, hopper_check narrow, memcheck (sparse, and the schedule
#    test under memcheck).  Prediction: all pass; 0 errors.
# 2. The six 16/32-row rows beside the peers, ours with the step's schedule and per
#    call.  Prediction: ~2.5 us off every row with the schedule (the prologue's scan:
#    batch_size, first scan, share arithmetic, first sequence found: 3.2 us, less one
#    record load ~0.6): b8 h16 41.2 -> ~38.7 (ratio ~1.0), the others ~1-2%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "schedule or segment_mode or graph" > "$OUT/schedule_tests.log" 2>&1
say "schedule, segment, graph tests exit $?: $(tail -1 "$OUT/schedule_tests.log")"
grep -E "^(FAILED|E )" "$OUT/schedule_tests.log" | head -20 | cut -c1-300 >> "$L"
check_tree . head narrow
GPU_FILE_TIMEOUT=200 gpu_files HEAD dense sparse fp8
memcheck_sparse HEAD
PYTHONPATH=.:tests timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -m gpu -q \
  -p no:cacheprovider tests/test_gpu_dense.py -k "schedule_reused and causal-" > /tmp/mc_sched.log 2>&1
say "schedule test under memcheck exit $?: $(grep -h 'ERROR SUMMARY\|passed\|failed' /tmp/mc_sched.log | tr '\n' ' ' | cut -c1-300)"
(timeout 280 bash tools/gpu_bench.sh b8_h16_s8192 b128_h16_s8192 ds_h16_sq1_ragged ds_h16_sq1_uniform \
  ds_h32_sq1_ragged ds_h32_sq1_uniform --repeats 20 --schedule both > /dev/null 2>&1)
say "peer bench $?"
cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote" >> "$L"
cat "$L"
