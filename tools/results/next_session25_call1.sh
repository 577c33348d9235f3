#!/usr/bin/env bash
# Prepared in session 24 (not run).  Device, repository root, .whl carried:
#   COMMIT=<HEAD> OUT=$OUT bash tools/results/next_session25_call1.sh
# 1. The peer run at HEAD (68ef962's kernels: the max slack and P(a)' as is): every README
#    row.  Expected from session 24's calls 1-3: b128 h128 ~457 us (FlashMLA ~465-472: ~1.02),
#    DeepSeek h128 ragged ~282 (~0.88), uniform ~238 (~0.94), b32 ~80-82, sparse as at 916c30b.
#    Watch b1 h128: 64.6 us in session 24's peer run against 52 in plain benches of the same
#    code; the bench's per-case log line says which P it ran.
# 2. sg (next_seesaw_segments_continuous.patch, v2: the next segment's first tiles and Q
#    prefetched into L2 by the loading warps at the segment's top, the first segment's Q
#    under the set-up, pdl_launch_dependents before every epilogue): its GPU test subset (its
#    own kernel cache warmed first: session 24's subset ran out of time compiling), then the
#    phase probe on it (per-segment stamps: a boundary's cost, segments a CTA, the CTAs' end
#    spread) for DeepSeek h128 ragged, b128 h128 and b1 h128 with the dispatcher's split.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/sg next_seesaw_segments_continuous.patch
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
peer_all_rows
(cd /tmp/sg && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm_sg.txt 2>&1); say "warm sg: $(head -1 /tmp/warm_sg.txt)"
(cd /tmp/sg && PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
  tests/test_gpu_dense.py -k "segment_mode or balanced or running_max or hopper_schedules" > /tmp/t_sg.log 2>&1)
say "sg dense subset exit $?: $(grep -h 'passed\|failed' /tmp/t_sg.log | tail -1)"; grep -h "FAIL\|Error" /tmp/t_sg.log | head -8 >> "$L"
(cd /tmp/sg && PYTHONPATH=.:tests timeout 120 python3 tools/phase_probe.py \
  --cases ds_h128_sq1_ragged b128_h128_s8192 b1_h128_s65536 > $OUT/phases_sg.txt 2>&1); say "sg phases exit $?"
(PYTHONPATH=.:tests timeout 120 python3 tools/phase_probe.py \
  --cases ds_h128_sq1_ragged b128_h128_s8192 b1_h128_s65536 > $OUT/phases_head.txt 2>&1); say "HEAD phases exit $?"
cat "$L" $OUT/phases_sg.txt $OUT/phases_head.txt
