# Prepared in session 41 (no device was lent then; never run): the narrow kernel's RS math
# for dense fp8_ds_mla at 16 rows (next_narrow_rs_math.patch): hopper_check narrow, the fp8
# GPU file and memcheck of the RS cases on the patched tree, then the fp8 and bf16 h16 rows
# beside HEAD (~450 s).  Run as: OUT=$OUT bash tools/results/next_session42_call1.sh
. tools/results/device_steps.sh
begin_call
patched /tmp/rs next_narrow_rs_math.patch
(cd /tmp/rs && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_rs.txt 2>&1)
say "warm rs: $(head -1 /tmp/warm_rs.txt)"
check_tree /tmp/rs rs narrow
(cd /tmp/rs && GPU_FILE_TIMEOUT=150 gpu_files rs fp8)
for c in 32 28 26; do
  (cd /tmp/rs && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 120 compute-sanitizer --tool memcheck \
     --error-exitcode 1 python3 tools/hopper_check.py --schedule narrow --case $c > /tmp/mc_$c.log 2>&1)
  say "memcheck case $c exit $?: $(grep -h 'ERROR SUMMARY\|PASS\|FAIL' /tmp/mc_$c.log | cut -c1-150 | tr '\n' ' ')"
done
C="fp8_ds_mla_b128_h16_s8192 b128_h16_s8192 fp8_b128_h16_s8192"
bench_trees . /tmp/rs
(cd /tmp/rs && PYTHONPATH=. timeout 60 python3 tools/bench.py --batch-size 8 --num-heads 16 --cache-len 8192 \
   --layout fp8_ds_mla --repeats 20 --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-110 >> "$L")
(PYTHONPATH=. timeout 60 python3 tools/bench.py --batch-size 8 --num-heads 16 --cache-len 8192 \
   --layout fp8_ds_mla --repeats 20 --check-seqs 2 2>&1 | grep -v "^#" | cut -c1-110 >> "$L")
say done
