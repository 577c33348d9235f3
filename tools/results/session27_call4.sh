#!/usr/bin/env bash
# Session 27, call 4.  Device, repository root:  OUT=$OUT bash tools/results/session27_call4.sh
# cw = next_ring_fill_order.patch: the ring's cp.async fills of 16-bit key tiles, odd rows
# taking their pieces' k pairs swapped, so a quarter warp's eight 16-byte writes land in
# eight distinct swizzle columns (in order: two rows' four writes in the same four columns,
# 2-way).  Serves the ring's dense 16-bit tiles (DeepSeek h=64 rows, h=16 at s_q=4) and
# sparse bf16.  Predicted: 0-4% on those rows (if LDGSTS fills pay shared-memory bank
# conflicts as STS does: the ncu counters below say).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
(PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm0.txt 2>&1); say "warm HEAD: $(head -1 /tmp/warm0.txt)"
GPU_FILE_TIMEOUT=60 checked_patch /tmp/cw next_ring_fill_order.patch cw ring sparse
(cd /tmp/cw && PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
  tests/test_gpu_dense.py -k "ring or matches_reference or hull" > /tmp/t_dense_ring.log 2>&1; say "cw dense ring: $(tail -1 /tmp/t_dense_ring.log)")
C="ds_h64_sq1_ragged ds_h64_sq1_uniform sparse_bf16_b128_sq1_h128 ds_h16_sq4_uniform"
BENCH_TIMEOUT=70 compare_rounds cw /tmp/cw
M=gpu__time_duration.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_ld.sum
M=$M,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared.sum
M=$M,smsp__sass_inst_executed_op_ldgsts.sum,l1tex__throughput.avg.pct_of_peak_sustained_active
for t in . /tmp/cw; do
  echo "== ncu ds_h64_sq1_uniform $t" >> "$L"
  (cd $t && PYTHONPATH=. timeout 90 ncu --clock-control none -k regex:mla_decode --launch-skip 1 --launch-count 1 \
    --metrics $M python3 tools/kernel_times.py --child ds_h64_sq1_uniform --calls 2 2>&1 | grep -E "^\s+(gpu__|sm__|smsp__|l1tex__)" >> "$L")
done
say ncu
cat "$L"
