#!/usr/bin/env bash
# Session 24, call 3.  Device, repository root:  OUT=$OUT bash tools/results/session24_call3.sh
# sg = next_seesaw_segments_continuous.patch: the seesaw (D_qk 576, a sequence's rows in one
#   row group) in segment mode, its segments back to back: each role walks the share's
#   segments itself; the loading warps refill a buffer half with the next segment's tile as
#   soon as it is released (mbarrier phases by each buffer's uses across segments); Q is
#   reloaded and the output staged over Q only (fp32 slices in turns).  Prediction: DeepSeek
#   h128 ragged 291 -> 245-260 us; uniform and b128 within -3..+1%; b32 and b1 (one job a
#   CTA) within +-2%; varlen -2..-6%.
# ns = the max slack reverted (why b1 h128 went 54 -> 64.6 us between the session-21 and
#   call-2 peer runs: the slack, or the machine?).  pa = next_seesaw_p0_as_is.patch.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
patched /tmp/sg next_seesaw_segments_continuous.patch
patched /tmp/pa next_seesaw_p0_as_is.patch
rm -rf /tmp/ns && cp -r . /tmp/ns && (cd /tmp/ns && git apply -R tools/results/next_max_slack.patch) || say "ns failed"
K="mla_decode_bf16_null_dense_fold0_hopper_seesaw mla_decode_bf16_causal_dense_fold0_hopper_seesaw mla_decode_bf16_null_dense_fold0_hopper_seesaw mla_decode_fp16_causal_dense_fold0_hopper_seesaw mla_decode_bf16_sliding_window_causal_dense_fold0_hopper_seesaw mla_decode_bf16_causal_dense_fold0_qk512_hopper_seesaw mla_decode_fp16_causal_dense_fold0_qk512_hopper_seesaw mla_combine_bf16 mla_combine_bf16_warp_rows mla_combine_fp16 mla_combine_fp16_warp_rows"
warm_kernels . /tmp/sg /tmp/pa /tmp/ns; say "warm"
(cd /tmp/sg && PYTHONPATH=.:tests timeout 200 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
  tests/test_gpu_dense.py -k "segment_mode or balanced or running_max or hopper_schedules" > /tmp/t_sg.log 2>&1)
say "sg dense subset: $(tail -1 /tmp/t_sg.log)"; grep -h "FAIL\|Error\|assert" /tmp/t_sg.log | head -8 >> "$L"
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096 b1_h128_s65536 b128_sq2_h128_varlen_causal"
for r in 1 2; do
  for d in . /tmp/sg /tmp/ns /tmp/pa; do echo "== $d ($r)" >> "$L"; (cd $d && PYTHONPATH=. BENCH_TIMEOUT=120 bench); done
  say "round $r"
done
cat "$L"
