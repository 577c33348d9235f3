# Prepared in session 41 (no device was lent then; never run): the narrow kernel's RS math
# for dense fp8_ds_mla and fp8 at 16 rows (next_narrow_rs_math.patch): hopper_check narrow
# and the fp8 GPU file on the patched tree, then the dense h16 rows of each layout beside
# HEAD, two rounds, and b=8 (~550 s).  Run as: OUT=$OUT bash tools/results/next_session42_call1.sh
. tools/results/device_steps.sh
begin_call
patched /tmp/rs next_narrow_rs_math.patch
(cd /tmp/rs && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_rs.txt 2>&1)
say "warm rs: $(head -1 /tmp/warm_rs.txt)"
check_tree /tmp/rs rs narrow
(cd /tmp/rs && GPU_FILE_TIMEOUT=150 gpu_files rs fp8)
C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 b128_h16_s8192"
bench_trees . /tmp/rs
bench_shape_trees "--batch-size 8 --num-heads 16 --cache-len 8192" . /tmp/rs
say done
