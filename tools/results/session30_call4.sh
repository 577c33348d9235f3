#!/usr/bin/env bash
# Session 30, call 4.  Device, repository root:  OUT=$OUT bash tools/results/session30_call4.sh
# Call 3: with the code of the narrow kernel's once-a-CTA paths compact (next_compact_code:
# the loader's chunk loop rolled, the shares' scans rolled, the epilogue's stores one branch
# a row) b8 h16 43.3 / 43.0 -> 41.0 / 40.8 us (the loader's first copies 1.5 us sooner, the
# epilogue 2.9 -> 2.0 us), but b128 h16 +3%, DeepSeek h16 +1.7%, h32 +4.4%: the rolled
# chunk loop in the steady state.  Unflushed L2 did not shorten those phases: the cold code
# is fetched from L2 into the SM's instruction cache, line after line.
# next_compact_code2.patch: the loader's first tile of a segment rolled, the rest unrolled;
# the scans rolled and, for a batch of at most NUM_THREADS sequences, the second scan gone
# (the first's prefix reused: 1.8 us of the prologue at b8); the epilogue as before.
# Prediction: b8 h16 ~40 us (-3), b128 h16 and the DeepSeek rows within 1% of HEAD; the
# prologue 3.9 -> ~2.5 us.  Checks first: hopper_check narrow, the dense file (segment mode
# with batches of 24-300 sequences, both scan paths), the sparse file.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
checked_patch /tmp/c2 next_compact_code2.patch c2 narrow > /dev/null
# (checked_patch ran no test files: they follow, each with its timeout)
(cd /tmp/c2 && GPU_FILE_TIMEOUT=200 gpu_files c2 dense sparse)
(cd /tmp/c2 && PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 16 --cases b8_h16_s8192 >> "$L" 2>&1)
C="b8_h16_s8192 b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged ds_h32_sq1_uniform ds_h32_sq1_ragged" \
  BENCH_TIMEOUT=80 bench_trees . /tmp/c2
cat "$L"
