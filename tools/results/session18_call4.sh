#!/usr/bin/env bash
# Session 18, call 4 (device, repository root; .whl carried):  OUT=$OUT bash tools/results/session18_call4.sh
# Where the h128 DeepSeek rows' time goes (0.73-0.78 of FlashMLA after call 3):
# (a) tools/phase_probe.py, per seesaw CTA: start, phases, tiles and us a tile, end; the
#     dispatcher's split (balanced) and forced P, uniform and ragged.  The makespan model
#     put ds h128 ragged at ~305 us with even 2-splits; it measures 342.  Prediction: the
#     ragged row's last CTAs are long splits that started late or ran slower a tile.
# (b) tools/kernel_times.py (ncu, L2 flushed, serialised): decode and combine apart,
#     balanced against MLA_CUPY_SPLIT=partitions, and FlashMLA's kernels on the same rows.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl 2>/dev/null && say "peers installed"
PYTHONPATH=.:tests timeout 150 python3 tools/phase_probe.py --cases ds_h128_sq1_uniform ds_h128_sq1_uniform:1 \
  ds_h128_sq1_ragged ds_h128_sq1_ragged:2 b32_h128_s4096 b128_h128_s8192:1 > $OUT/phases.txt 2>&1
say "phase probe exit $?"
PYTHONPATH=. timeout 150 python3 tools/kernel_times.py ds_h128_sq1_uniform ds_h128_sq1_ragged b32_h128_s4096 --calls 5 \
  > $OUT/ktimes_auto.txt 2>&1; say "kernel_times auto exit $?"
MLA_CUPY_SPLIT=partitions PYTHONPATH=. timeout 100 python3 tools/kernel_times.py ds_h128_sq1_uniform b32_h128_s4096 --calls 5 \
  > $OUT/ktimes_partitions.txt 2>&1; say "kernel_times partitions exit $?"
PYTHONPATH=.:/tmp/site timeout 120 python3 tools/kernel_times.py ds_h128_sq1_uniform ds_h128_sq1_ragged b32_h128_s4096 --calls 5 \
  --peer flashmla > $OUT/ktimes_flashmla.txt 2>&1; say "kernel_times flashmla exit $?"
cat "$L"; cat $OUT/phases.txt | grep -v "^#"; tail -12 $OUT/ktimes_auto.txt; tail -8 $OUT/ktimes_partitions.txt; tail -14 $OUT/ktimes_flashmla.txt
