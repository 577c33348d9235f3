# Prepared in session 42 (never run): after the RS patches landed (.whl carried; COMMIT =
# the landed commit).  ~300 s with a cold start (session 40's peer run of these rows: 70 s).  Run as:
#   COMMIT=<landed> OUT=$OUT bash tools/results/next_rs_call3.sh
#   0. The landed tree as committed (whatever subset of the patches landed): hopper_check
#      narrow and the fp8 and sparse GPU files.
#   1. Every README peer row at the landed commit (peer_all_rows): the bf16 and sparse
#      FlashMLA rows within +-0.02 of session 40's ratios (their kernels unchanged), except
#      where the RS kernels route (none of these rows: h64/h128 sparse run the ring).
#   2. The fp8 and sparse-more rows for the README's fp8 table (the dense fp8 rows and the
#      h16 / h32 sparse rows, which no peer runs) into $OUT/fp8/; then ours alone, for the
#      record (no same-run baseline): dense b8 h16 of both fp8 layouts and sparse `fp8`
#      b128 h16.
. tools/results/device_steps.sh
begin_call
check_tree . landed narrow
GPU_FILE_TIMEOUT=120 gpu_files landed fp8 sparse
PEER_TIMEOUT=300 peer_all_rows
mkdir -p "$OUT/fp8"
(OUT=$OUT/fp8 timeout 200 bash tools/gpu_bench.sh fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 \
   sparse_ds_mla_b128_sq1_h16 sparse_ds_mla_b128_sq1_h32 --repeats 20 > /dev/null 2>&1)
say "fp8 rows $?"
cut -c1-230 "$OUT/fp8/bench.log" | grep -v "^# wrote" >> "$L"
bench_shape_trees "--batch-size 8 --num-heads 16 --cache-len 8192" .
LAYOUTS=fp8 bench_shape_trees "--batch-size 128 --num-heads 16 --cache-len 32768 --sparse-topk 2048" .
say done
