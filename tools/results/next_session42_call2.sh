# Prepared in session 41 (never run): memcheck of the RS cases of hopper_check narrow
# (32: fp8_ds_mla, 1 head; 28: fp8_ds_mla, window and sink; 33: fp8, 4 heads, page 3; 31:
# fp8, D_QK 512, window), then the dense GPU file on the patched tree (~550 s).
# Run as: OUT=$OUT bash tools/results/next_session42_call2.sh
. tools/results/device_steps.sh
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
patched /tmp/rs next_narrow_rs_math.patch
(cd /tmp/rs && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_rs.txt 2>&1)
say "warm rs: $(head -1 /tmp/warm_rs.txt)"
for c in 32 28 33 31; do
  (cd /tmp/rs && PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
     python3 tools/hopper_check.py --schedule narrow --case $c > /tmp/mc_$c.log 2>&1)
  say "memcheck case $c exit $?: $(grep -h 'ERROR SUMMARY\|PASS\|FAIL' /tmp/mc_$c.log | cut -c1-150 | tr '\n' ' ')"
done
(cd /tmp/rs && GPU_FILE_TIMEOUT=240 gpu_files rs dense)
say done
