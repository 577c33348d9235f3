#!/usr/bin/env bash
# Session 29 call 3 (device, repository root): OUT=$OUT bash tools/results/session29_call3.sh
# Why the fp8 narrow kernel runs 1.3x its slower side.  Call 2 refuted the coupling reading
# (the early record copy: +1.5%; a ring of 18 slots instead of 21: -1.5%), so contention:
# the two sides share the SM's shared-memory bandwidth (per 64-key tile ~322 KB: bulk writes
# 37, raw reads 37, fp16 stores 74, wgmma A reads 74 + 66, B reads 34) or its issue slots.
# Prediction: if shared-memory bandwidth, removing the fp16 stores (nostore) takes fp8 h16
# 257 -> 210-220 and the bulk copies (nocopy) -> 230-240, the conversions (noconvert) < 3%;
# if issue, noconvert moves more than nocopy.  Then ncu (no source counters) on the full
# kernel: shared pipe and LSU wavefronts, bank conflicts, tensor pipe, stall reasons.
set -u
export PYTHONUNBUFFERED=1
. tools/results/device_steps.sh
begin_call
for c in fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192; do
  echo "== $c ablations (keep wgmma)" >> "$L"
  PYTHONPATH=.:tests timeout 150 python3 tools/producer_ceiling.py $c --keep-mma \
    --ablate nostore,nocopy,noconvert,nocopy+nostore,nostore+noconvert,idle,nomath >> "$L" 2>&1
  say "$c ablations"
done
for c in fp8_b128_h16_s8192; do
  timeout 150 ncu --clock-control none -f -o "$OUT/ncu_$c" --nvtx --nvtx-include timed_call/ \
    --section SpeedOfLight --section ComputeWorkloadAnalysis --section MemoryWorkloadAnalysis \
    --section MemoryWorkloadAnalysis_Tables --section WarpStateStats --section SchedulerStats \
    --section InstructionStats --section LaunchStats \
    --metrics sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,smsp__inst_executed.sum \
    env PYTHONPATH=. python3 tools/kernel_times.py --child $c --calls 1 > "$OUT/ncu_$c.txt" 2>&1
  say "ncu $c exit $?"
  ncu -i "$OUT/ncu_$c.ncu-rep" --page raw --csv 2>/dev/null | gzip > "$OUT/ncu_${c}_raw.csv.gz"
  ncu -i "$OUT/ncu_$c.ncu-rep" --page details 2>/dev/null > "$OUT/ncu_${c}_details.txt"
  rm -f "$OUT/ncu_$c.ncu-rep"
done
cat "$L"
