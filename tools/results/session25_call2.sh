#!/usr/bin/env bash
# Session 25, call 2.  Device, repository root, .whl carried:
#   COMMIT=<HEAD> OUT=$OUT bash tools/results/session25_call2.sh
# sgw = next_seesaw_segments_weighted.patch: sg v2 (the seesaw's segment mode, segments
# back to back, the next segment's first tiles and Q prefetched into L2) with (a) the
# equal cut weighing each sequence's start as 4 tiles (render.segment_start_tiles; call
# 1's probe: a segment costs ~13 us besides its tiles, the last CTAs were those with 3-4
# segments) and (b) segment mode for the seesaw only from 64 sequences (b1 +12 us, b32
# +7 us in call 1).  Predicted: DeepSeek h128 ragged 288 -> 272-278 (the probe's CTA end
# spread 237-284 closing to ~+-8 us), b128 h128 -2%, varlen -1%, DeepSeek uniform +1.5%
# (its aligned cut pays segment mode's fixed cost), b1 and b32 unchanged (split mode).
# Then the machine: versions, and SM clock / power while ours and FlashMLA run b128 h128.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/sgw next_seesaw_segments_weighted.patch
(cd /tmp/sgw && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1); say "warm sgw: $(head -1 /tmp/warm.txt)"
check_tree /tmp/sgw sgw seesaw
(cd /tmp/sgw && PYTHONPATH=.:tests timeout 240 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
  tests/test_gpu_dense.py -k "segment_mode or balanced or running_max or hopper_schedules" > /tmp/t_sgw.log 2>&1)
say "sgw dense subset exit $?: $(grep -h 'passed\|failed' /tmp/t_sgw.log | tail -1)"; grep -h "^FAILED\|Error" /tmp/t_sgw.log | head -8 >> "$L"
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096 b1_h128_s65536 b128_sq2_h128_varlen_causal ds_h128_sq2_ragged"
BENCH_TIMEOUT=150 compare_rounds sgw /tmp/sgw
(cd /tmp/sgw && PYTHONPATH=.:tests timeout 60 python3 tools/phase_probe.py --cases ds_h128_sq1_ragged > $OUT/phases.txt 2>&1); say "sgw phases exit $?"
python3 -c "import cupy; print('cupy', cupy.__version__, 'nvrtc', cupy.cuda.nvrtc.getVersion(), 'driver', cupy.cuda.runtime.driverGetVersion(), 'runtime', cupy.cuda.runtime.runtimeGetVersion())" >> "$L" 2>&1
nvidia-smi --query-gpu=name,power.limit,clocks.max.sm,clocks.max.mem,vbios_version --format=csv >> "$L" 2>&1
nvidia-smi --query-gpu=timestamp,clocks.sm,clocks.mem,power.draw,temperature.gpu,clocks_throttle_reasons.active --format=csv -lms 50 > $OUT/smi.csv 2>&1 &
SMI=$!
(timeout 120 bash tools/gpu_bench.sh b128_h128_s8192 --repeats 30 > /dev/null 2>&1; say "peer b128 $?"; cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote" >> "$L")
kill $SMI
cat "$L"
