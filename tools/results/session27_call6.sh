#!/usr/bin/env bash
# Session 27, call 6.  Device, repository root:  OUT=$OUT bash tools/results/session27_call6.sh
# Routing of dense fp8 row groups of 17-32 rows (h=24 and h=32: DeepSeek at 4-way tensor
# parallelism has 32 heads a GPU).  Auto today: `fp8` at 17-31 rows the portable kernel,
# 32 rows the ring (compiler.DENSE_FP8_HOPPER_MIN_ROWS, measured at 0c73aee before the
# ring's producer lost its bank conflicts); fp8_ds_mla the ring.  The narrow kernel's
# 32-row fp8 tile (one producer warpgroup) runs them only when forced.  Each mode checked
# against the reference, then timed (20 repeats); the forced schedules with MLA_CUPY_BACKEND=hopper
# (under auto, dense fp8 at 17-31 rows runs the portable kernel whatever the schedule).  Predicted: the narrow tile fastest at
# both head counts for both layouts (its h=16 is 258 / 292 us against the ring's ~400).
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
(PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm0.txt 2>&1); say "warm HEAD: $(head -1 /tmp/warm0.txt)"
for layout in fp8 fp8_ds_mla; do
  for h in 32 24; do
    for mode in auto narrow ring portable; do
      case $mode in
        auto) env=() ;; narrow) env=(MLA_CUPY_BACKEND=hopper MLA_CUPY_HOPPER_SCHEDULE=narrow) ;;
        ring) env=(MLA_CUPY_BACKEND=hopper MLA_CUPY_HOPPER_SCHEDULE=ring) ;; portable) env=(MLA_CUPY_BACKEND=portable) ;;
      esac
      echo "== $layout h$h $mode" >> "$L"
      env "${env[@]}" PYTHONPATH=. timeout 60 python3 tools/bench.py --batch-size 128 --num-heads $h --q-len 1 \
        --cache-len 8192 --layout $layout --mask causal --repeats 20 --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"
    done
  done
  say "$layout done"
done
cat "$L"
