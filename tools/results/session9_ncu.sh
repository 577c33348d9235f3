# Why the register producer (2026-12-01f_dropped_raw_registers.patch) is slower than the bulk-copy one:
# the same counters on HEAD's and the patch's sparse fp8_ds_mla h128 kernel.
set -u
export PYTHONPATH=.
rm -rf /tmp/rr && cp -r . /tmp/rr && (cd /tmp/rr && git apply tools/results/2026-12-01f_dropped_raw_registers.patch)
M=gpu__time_duration.sum,l1tex__t_requests_pipe_lsu_mem_global_op_ld.sum,l1tex__t_sectors_pipe_lsu_mem_global_op_ld.sum,l1tex__data_pipe_lsu_wavefronts_mem_shared_op_st.sum,l1tex__data_bank_conflicts_pipe_lsu_mem_shared_op_st.sum,smsp__warp_issue_stalled_long_scoreboard_per_warp_active.pct,smsp__warp_issue_stalled_lg_throttle_per_warp_active.pct,smsp__warp_issue_stalled_mio_throttle_per_warp_active.pct,smsp__warp_issue_stalled_barrier_per_warp_active.pct,lts__t_sectors_srcunit_tex_op_read.sum,dram__bytes_read.sum,l1tex__m_xbar2l1tex_read_bytes.sum
for t in . /tmp/rr; do echo "== $t"
  (cd $t && timeout 150 ncu --clock-control none -k regex:mla_decode_fp8_ds_mla -s 2 -c 1 --metrics $M \
     python3 tools/bench.py sparse_ds_mla_b128_sq1_h128 --repeats 20 > /tmp/ncu.txt 2>&1; grep -E "^\s+(gpu__|l1tex|smsp|lts|dram)" /tmp/ncu.txt || tail -15 /tmp/ncu.txt)
done
