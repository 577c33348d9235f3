#!/usr/bin/env bash
# Session 31, call 3 (device, repository root, .whl carried):
#   OUT=$OUT COMMIT=<commit> bash tools/results/session31_call3.sh
# The DecodeSchedule for the dense ring and seesaw (cta_work: a CTA's split length,
# place and sequence kept by a step's first call), and call 2's test fixed (a window's
# lengths stay: its pages outside the window are sentinel ids).
# 1. The schedule test (16 heads narrow, 64 ring, 128 seesaw), hopper_check seesaw and
#    ring, the dense, sparse and fp8 files, memcheck (sparse; the schedule test's seesaw
#    case).  Prediction: all pass, 0 errors.
# 2. The h64 / h128 rows beside the peers, ours with the step's schedule and per call.
#    Prediction: 1.5-2.5 us off each row (the seesaw's set-up before Q: b32 h128 4.1 us
#    entry -> Q landed of which ~1.4 is Q's round): b1 h128 51 -> ~49.5, b32 78.6 -> ~76.5;
#    DeepSeek h128 ragged (two waves of CTAs) ~3-4 us.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "schedule_reused" > "$OUT/schedule_tests.txt" 2>&1
say "schedule tests exit $?: $(tail -1 "$OUT/schedule_tests.txt")"
grep -E "^(FAILED|E )" "$OUT/schedule_tests.txt" | head -20 | cut -c1-300 >> "$L"
check_tree . seesaw seesaw
check_tree . ring ring
GPU_FILE_TIMEOUT=200 gpu_files HEAD dense sparse fp8
memcheck_sparse HEAD
PYTHONPATH=.:tests timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 python3 -m pytest -m gpu -q \
  -p no:cacheprovider tests/test_gpu_dense.py -k "schedule_reused and 128-causal" > /tmp/mc_sched.log 2>&1
say "schedule test (seesaw) under memcheck exit $?: $(grep -h 'ERROR SUMMARY\|passed\|failed' /tmp/mc_sched.log | tr '\n' ' ' | cut -c1-300)"
(timeout 230 bash tools/gpu_bench.sh b1_h128_s65536 b32_h128_s4096 b128_h128_s8192 ds_h128_sq1_ragged \
  ds_h128_sq1_uniform ds_h64_sq1_ragged ds_h64_sq1_uniform --repeats 20 --schedule both > /dev/null 2>&1)
say "peer bench $?"
cut -c1-250 "$OUT/bench.log" | grep -v "^# wrote" >> "$L"
cat "$L"
