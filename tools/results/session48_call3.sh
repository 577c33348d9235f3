# Session 48, call 3 (asked for the H200): dense `fp8` rows by 128-byte swizzled TMA column boxes
# (next_fp8_tma_sw128.patch: five boxes a row box, the last half past the 576-byte row, every
# box row whole 32-byte sectors).  Call 2's ncu put the 144-byte boxes' loss on L2 traffic:
# +18% sectors, +36% requests, sector hit rate 19 -> 50% (pieces straddling sectors read
# twice).  Checked first (hopper_check narrow, the fp8 file, the dense file's fp8 tests,
# memcheck), then two rounds beside HEAD and the 144-byte tree, then ncu of the new tree.
# Predicted (H200): L2 read sectors and requests back to HEAD's (20.9M / 11.9M); dense fp8
# b128 h16 165 -> 153-158 us; h32 flat to -2%; fp8_ds_mla unchanged.
# Run as: OUT=$OUT bash tools/results/session48_call3.sh
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/sw sw next_fp8_tma_sw128.patch
check_tree /tmp/sw sw narrow; rc=$?
(cd /tmp/sw && GPU_FILE_TIMEOUT=100 gpu_files sw fp8)
(cd /tmp/sw && PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow_schedule_fp8 or far_below or longest_first or schedule_reused" > /tmp/t_dense.log 2>&1; echo "[exit $?]" >> /tmp/t_dense.log)
say "sw dense -k fp8: $(tail -2 /tmp/t_dense.log | tr '\n' ' ')"; cp /tmp/t_dense.log $OUT/
patched_stack /tmp/tma tma next_fp8_tma_raw.patch
if [ $rc -eq 0 ]; then
  C="fp8_b128_h16_s8192 fp8_b128_h32_s8192" ROUNDS=2 BENCH_TIMEOUT=150 bench_trees . /tmp/sw /tmp/tma
fi
(cd /tmp/sw && PYTHONPATH=. timeout 100 python3 tools/ncu_compare.py fp8_b128_h16_s8192 --peer none --out /tmp/ncu_sw > /tmp/ncu_sw.txt 2>&1)
say "ncu sw $?"
cp /tmp/ncu_sw/fp8_b128_h16_s8192_ours.csv.gz $OUT/sw_fp8_b128_h16_s8192_ours.csv.gz
python3 tools/ncu_compare.py --raw tools/results/2026-12-05_session48/call2_h100/fp8_b128_h16_s8192_ours.csv.gz \
  /tmp/ncu_sw/fp8_b128_h16_s8192_ours.csv.gz --peer sw 2>&1 | grep -v "stall\|launch" | cut -c1-160 >> "$L"
(cd /tmp/sw && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=.:tests timeout 150 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py -k "narrow_schedule_fp8" --maxfail=1 > /tmp/mc.log 2>&1)
say "sw memcheck exit $?: $(grep -h 'ERROR SUMMARY\|passed\|failed' /tmp/mc.log | tail -2 | tr '\n' ' ')"
cp /tmp/mc.log $OUT/
say done
