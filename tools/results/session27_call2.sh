#!/usr/bin/env bash
# Session 27, call 2.  Device, repository root:  OUT=$OUT bash tools/results/session27_call2.sh
# la = next_narrow_lookahead.patch: the narrow fp8 producer's key lookups loaded a tile
# before their use (fetch two tiles ahead, resolve one ahead, as the ring's producer
# does); HEAD consumes each lookup's LDG right after issuing it, before the raw wait
# (nolookup took 10 us off the full kernel in session 26).  Predicted: fp8 h16 264 ->
# 255-262, fp8_ds_mla h16 293 -> 284-291.
# lr = next_narrow_lookahead_rope.patch: la, and the fp8 e4m3 rope read by key n from
# piece (own + n) % 4 (2-way instead of 4-way conflicted; the stores stay conflict-free).
# Predicted: fp8 h16 a further 1-2% (~64 of ~2700 shared-memory cycles a tile); ds_mla as la.
# Then: the dense test file at HEAD (timed out at 90 s in call 1, no failure), ncu's
# shared-memory counters and the stall hotspots of the fp8 h16 kernel at HEAD.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
(PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm0.txt 2>&1); say "warm HEAD: $(head -1 /tmp/warm0.txt)"
GPU_FILE_TIMEOUT=60 checked_patch /tmp/la next_narrow_lookahead.patch la narrow fp8 sparse
GPU_FILE_TIMEOUT=60 checked_patch /tmp/lr next_narrow_lookahead_rope.patch lr narrow fp8 sparse
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192 sparse_ds_mla_b128_sq4_h16_fold"
for r in 1 2; do
  for t in . /tmp/la /tmp/lr; do echo "== $t ($r)" >> "$L"; (cd $t && PYTHONPATH=. BENCH_TIMEOUT=60 bench); done
  say "round $r"
done
GPU_FILE_TIMEOUT=240 gpu_files HEAD dense
M=gpu__time_duration.sum,sm__cycles_elapsed.avg,smsp__inst_executed.sum,smsp__issue_active.avg.pct_of_peak_sustained_active
M=$M,sm__pipe_shared_cycles_active.avg.pct_of_peak_sustained_active,l1tex__throughput.avg.pct_of_peak_sustained_active
M=$M,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum
M=$M,sm__pipe_tensor_op_gmma_cycles_active.avg.pct_of_peak_sustained_active,dram__throughput.avg.pct_of_peak_sustained_elapsed
for c in fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192; do
  for t in . /tmp/lr; do
    echo "== ncu $c $t" >> "$L"
    (cd $t && PYTHONPATH=. timeout 90 ncu --clock-control none -k regex:mla_decode --launch-skip 1 --launch-count 1 \
      --metrics $M python3 tools/kernel_times.py --child $c --calls 2 2>&1 | grep -E "^\s+(gpu__|sm__|smsp__|l1tex__|dram__)" >> "$L")
  done
done
say ncu
PYTHONPATH=. timeout 120 python3 tools/ncu_hotspots.py fp8_b128_h16_s8192 mla_decode --top 45 --out $OUT/hot_fp8 > $OUT/hotspots_fp8_h16.txt 2>&1
say "hotspots $?"; head -40 $OUT/hotspots_fp8_h16.txt >> "$L"
cat "$L"
