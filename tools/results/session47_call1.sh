# Session 47, call 1 (H200): where the 32-row features kernels' time goes.
#   0. the dense file's fp8 tests on the features tree (owed from session 46: they ran on an H100)
#   1. producer_ceiling with the MMAs kept, dense fp8 / fp8_ds_mla b128 h32 s8192 (271 / 299 us;
#      the h16 rows read the same bytes in 169 / 177): noexchange, nosoftmax, both, nomath.
#      Predicted: nomath ~161 / ~170 (the h16 rows' copies); if the lockstep softmax and
#      exchange bound the row, noexchange+nosoftmax takes 60% or more of the gap to nomath.
#   2. the same for sparse fp8_ds_mla h32 (92.6 us): noexchange+nosoftmax, nomath
#   3. ncu source hotspots of the dense fp8 h32 kernel: the math warpgroups' stalls by instruction
# Run as: OUT=$OUT bash tools/results/session47_call1.sh
. tools/results/device_steps.sh
begin_call
(PYTHONPATH=.:tests timeout 90 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
   -k "narrow_schedule_fp8 or longest_first or schedule_reused" > /tmp/t_dense_fp8.log 2>&1; echo "[exit $?]" >> /tmp/t_dense_fp8.log)
say "dense -k fp8: $(tail -2 /tmp/t_dense_fp8.log | tr '\n' ' ')"
cp /tmp/t_dense_fp8.log $OUT/
PYTHONPATH=.:tests timeout 200 python3 tools/producer_ceiling.py fp8_b128_h32_s8192 fp8_ds_mla_b128_h32_s8192 \
  --keep-mma --ablate noexchange,nosoftmax,noexchange+nosoftmax,nomath > $OUT/ceiling32.txt 2>&1
say "ceiling32 exit $?"; cut -c1-200 $OUT/ceiling32.txt >> "$L"
PYTHONPATH=.:tests timeout 90 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h32 \
  --keep-mma --ablate noexchange+nosoftmax,nomath > $OUT/ceiling32s.txt 2>&1
say "ceiling32s exit $?"; cut -c1-200 $OUT/ceiling32s.txt >> "$L"
PYTHONPATH=. timeout 150 python3 tools/ncu_hotspots.py fp8_b128_h32_s8192 hopper_narrow --top 45 --out $OUT/hot32 > $OUT/hot32.txt 2>&1
say "hotspots exit $?"
say done
