#!/usr/bin/env bash
# Session 30, call 6.  Device, repository root:  OUT=$OUT bash tools/results/session30_call6.sh
# The phase probes after their shared loop (phase_probe.stamped_calls) on HEAD (391c52c's
# kernel): the narrow kernel's phases at b8 / b128 h16 (prediction: prologue ~3.6 us, the
# loader's first copies ~1.6 us after its page, epilogue ~1.8 us, as call 4's patched tree),
# and the seesaw's on two cases (the tool's own check that the refactor runs).  New stamps
# split the prologue's 1.5 us after the first scan into the share's arithmetic (64-bit
# divisions, prediction ~1 us) and finding its first sequence, and time the math's first S^T
# (issued -> retired; prediction: retired ~1.6 us after the loader's copies, as data lands).
# Not run in session 30 (no device time left): session 31's first call, with the GPU files.
set -u
export PYTHONUNBUFFERED=1
. tools/results/device_steps.sh
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
PYTHONPATH=.:tests timeout 80 python3 tools/narrow_phases.py --rows 16 --cases b8_h16_s8192 b128_h16_s8192 >> "$L" 2>&1
say "narrow phases exit $?"
PYTHONPATH=.:tests timeout 60 python3 tools/phase_probe.py --cases b32_h128_s4096:2 b1_h128_s65536:64 >> "$L" 2>&1
say "seesaw phases exit $?"
cat "$L"
