#!/usr/bin/env bash
# Session 35, call 3 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session35_call3.sh
# HEAD = the seesaw's L2 prefetch only where group_tiles > 1 (call 2: forced h64 175.7 /
# 176.7 against 199.8 / 199.7, the auto rows within 1%).
# 1. Its checks: hopper_check --schedule seesaw, and the dense GPU file at the end.
# 2. The narrow kernel's TMA boxes with the compile-time evict_first hint
#    (next_narrow_evict_first_const.patch; session 34's runtime-policy version: b8 h16 -6%,
#    the long rows +3-5%).  Is the long rows' loss the hint or the runtime policy's code?
#    Prediction: if the hint, b128 h16 +3-5% again and b8 -6%; then the crossover over
#    b8/b16/b32 (8, 16, 32 tiles a share) places a rule.
# 3. The seesaw forced at h64 (uniform, ragged) under the phase probe: its time a tile
#    without the prefetch (prediction ~2.3 us) and its fixed cost (~17 us).
# 4. b1 h128 s65536 decode and combine apart (kernel_times, ncu serialised), ours and
#    FlashMLA's: where b1's 1.15 (target 1.2, -2.4 us) can come from.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
check_tree . head seesaw
patched /tmp/ef next_narrow_evict_first_const.patch
for r in 1 2; do
  for t in . /tmp/ef; do
    echo "== $t ($r)" >> "$L"
    (cd $t && C="b8_h16_s8192 b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged" PYTHONPATH=. bench
     for b in 16 32; do
       PYTHONPATH=. timeout 60 python3 tools/bench.py --batch-size $b --num-heads 16 --cache-len 8192 \
         --repeats 20 --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-100 >> "$L"
     done)
  done
  say "round $r"
done
MLA_CUPY_HOPPER_SCHEDULE=seesaw PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py \
  --cases ds_h64_sq1_uniform ds_h64_sq1_ragged >> "$L" 2>&1
say "phase probe $?"
PYTHONPATH=.:tests timeout 100 python3 tools/kernel_times.py b1_h128_s65536 b32_h128_s4096 --calls 5 2>&1 \
  | grep -v "curand\|cupy_\|gen_seq" >> "$L"
say "kernel_times ours $?"
python3 -m pip install -q --no-index --no-deps --no-compile --no-cache-dir --target /tmp/site .whl/*.whl
PYTHONPATH=.:tests:/tmp/site timeout 120 python3 tools/kernel_times.py b1_h128_s65536 b32_h128_s4096 --calls 5 \
  --peer flashmla 2>&1 | grep -v "curand\|cupy_\|gen_seq" >> "$L"
say "kernel_times flashmla $?"
GPU_FILE_TIMEOUT=200 gpu_files head dense
cat "$L"
