#!/usr/bin/env bash
# Prepared in session 30 for session 31's first call (not run).  Device, repository root:
#   OUT=$OUT bash tools/results/next_session31_call1.sh
# 1. HEAD's narrow kernel with the epilogue's 64-bit offset (ad9ff2c, compile-tested only):
#    hopper_check narrow, the dense, sparse and fp8 files, memcheck.  Prediction: 0 failures;
#    83 / 31 / 12 passed; 0 errors.
# 2. The phase probes after their shared loop (session30_call6.sh): the narrow kernel's new
#    stamps (the share's arithmetic apart from finding its sequence; the math's first S^T
#    issued and retired) at b8 / b128 h16 and the 32-row tile on DeepSeek h32; the seesaw's
#    phases on two cases.  Predictions: the share's arithmetic ~1 us of the 1.5; the first
#    S^T retired ~1.6 us after the loader's copies.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
check_tree . head narrow
GPU_FILE_TIMEOUT=200 gpu_files HEAD dense sparse fp8
memcheck_sparse HEAD
PYTHONPATH=.:tests timeout 80 python3 tools/narrow_phases.py --rows 16 --cases b8_h16_s8192 b128_h16_s8192 >> "$L" 2>&1
say "narrow phases 16 exit $?"
PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 32 --cases ds_h32_sq1_uniform ds_h32_sq1_ragged >> "$L" 2>&1
say "narrow phases 32 exit $?"
PYTHONPATH=.:tests timeout 60 python3 tools/phase_probe.py --cases b32_h128_s4096:2 b1_h128_s65536:64 >> "$L" 2>&1
say "seesaw phases exit $?"
cat "$L"
