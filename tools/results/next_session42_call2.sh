# Prepared in session 41 (never run): the dense GPU file on the RS patch's tree (every
# non-RS narrow variant sampled on the CPU compiles to the same SASS as HEAD's; the file
# also covers the routing), then the forced-portable GPU files owed since session 40 (~450 s).  Run as: OUT=$OUT bash tools/results/next_session42_call2.sh
. tools/results/device_steps.sh
begin_call
patched /tmp/rs next_narrow_rs_math.patch
(cd /tmp/rs && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_rs.txt 2>&1)
say "warm rs: $(head -1 /tmp/warm_rs.txt)"
(cd /tmp/rs && GPU_FILE_TIMEOUT=240 gpu_files rs dense)
PORTABLE_TIMEOUT=200 portable dense sparse fp8
say done
