#!/usr/bin/env bash
# Prepared in session 24 (not run).  Device, repository root, .whl carried:
#   COMMIT=<HEAD> OUT=$OUT bash tools/results/next_session25_call3.sh
# bw = next_bench_warm.patch: Timer.gpu_us warms the GPU (~50 ms of 512 MiB flushes) before
#   every implementation's timing.  Hypothesis (NOTES.md session 24): the peer run's b1 h128
#   64.6 us against 52 in a plain bench is ours being timed first after the CPU reference
#   check, on a GPU whose clocks have not ramped; the peers run right after ours.
#   Prediction if so: b1 ~52-55 and b32 ~80-82 with bw, the peers' times unchanged or
#   slightly faster; if b1 stays ~64 with bw, the difference is elsewhere (torch's context?).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/bw next_bench_warm.patch
for d in . /tmp/bw; do
  (cd $d && timeout 150 bash tools/gpu_bench.sh b8_h16_s8192 b32_h128_s4096 b1_h128_s65536 ds_h128_sq1_uniform \
    --repeats 20 > /dev/null 2>&1; say "$d peer bench $?"; cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote" >> "$L")
done
cat "$L"
