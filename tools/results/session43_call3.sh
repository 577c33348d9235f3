# Session 43, call 3: the landed 16-row RS stack (math, sparse, raw_ahead, three_groups) as
# committed, with .whl carried.  ~300 s (device budget: 453 s left).  Run as:
#   COMMIT=<landed> OUT=$OUT bash tools/results/session43_call3.sh
#   0. hopper_check narrow; the fp8 and sparse GPU files; the dense file's fp8 narrow and
#      fp8_ds_mla tests (call 2's dense file on the six-patch tree ran out of time at 71%
#      with no failure); memcheck of the 16-row sparse garbage-index cases.
#   1. The fp8 rows no peer runs (dense fp8 b128 h16 of both layouts, sparse h16 / h32)
#      into $OUT/fp8: call 2's 216.7 / 207.4 / 73.8 / 105.7 us again within +-3%.
#   2. Every README peer row (peer_all_rows): bf16 and sparse FlashMLA rows as session 40's
#      ratios +-0.02 (no kernel of theirs changed; none of them routes to the RS kernels).
. tools/results/device_steps.sh
begin_call
check_tree . landed narrow
GPU_FILE_TIMEOUT=90 gpu_files landed fp8 sparse
(PYTHONPATH=.:tests timeout 60 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow_schedule_fp8 or longest_first or schedule_reused" > /tmp/t_dense_fp8.log 2>&1; echo "[exit $?]" >> /tmp/t_dense_fp8.log)
say "landed dense -k fp8: $(tail -2 /tmp/t_dense_fp8.log | tr '\n' ' ')"
(MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/results/rs_memcheck_cases.py 16 43 > /tmp/mc.log 2>&1)
say "memcheck 16 43 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc.log | cut -c1-120 | tr '\n' ' ')"
mkdir -p "$OUT/fp8"
(OUT=$OUT/fp8 timeout 70 bash tools/gpu_bench.sh fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 \
   sparse_ds_mla_b128_sq1_h16 sparse_ds_mla_b128_sq1_h32 --repeats 20 > /dev/null 2>&1)
say "fp8 rows $?"
cut -c1-230 "$OUT/fp8/bench.log" | grep -v "^# wrote" >> "$L"
PEER_TIMEOUT=130 peer_all_rows
say done
