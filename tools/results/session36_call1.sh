#!/usr/bin/env bash
# Session 36, call 1 (prepared in session 35, ran in session 36; device, repository root, .whl carried):
#   OUT=$OUT bash tools/results/session36_call1.sh
# next_narrow_evict_first_twin.patch: each narrow variant over a dense 16-bit cache gets a
# compile-time twin `_evict_first` (its TMA copies of the keys under L2's evict_first hint),
# which the dispatcher runs in segment mode when every share holds at most 16 tiles by the
# host's bound (compiler.takes_evict_first: host_batch x ceil((max_cache_length +
# q_max_seq_len) / 64) over the shares).  The twin's kernel is session 35 call 3's
# next_narrow_evict_first_const.patch (b8 h16 40.0 -> 36.1, b16 61.8 -> 59.1); the long
# batches keep today's kernel unchanged (calls 4-5: any run-time choice inside one kernel
# cost them 2-5%).  CPU: the 24 twins compile without spills; routing tests pass.
# Predictions:
# 1. checked_patch: hopper_check narrow 0 failures; the dense file passes, with the new
#    test_short_streams_run_the_evict_first_twin; memcheck 0.
# 2. Two rounds, HEAD / twin, us: b8 h16 ~39.7 -> ~36.1, b16 ~61 -> ~59 (both the twin);
#    b32 (31 tiles a share), b128 h16, DeepSeek h16 uniform / ragged within 1% (the plain
#    kernel in both trees).
# 3. b8 h16 beside the peers on the twin: ~x1.05-1.07 against FlashMLA (0.99 at HEAD).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=200 checked_patch /tmp/twin next_narrow_evict_first_twin.patch twin narrow dense
for r in 1 2; do
  for t in . /tmp/twin; do
    echo "== $t ($r)" >> "$L"
    (cd $t && C="b8_h16_s8192 b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged" PYTHONPATH=. bench; \
       bench_batches 16 8192)
  done
  say "round $r"
done
(cd /tmp/twin && timeout 100 bash tools/gpu_bench.sh b8_h16_s8192 --repeats 20 > /dev/null 2>&1)
say "peer bench $?"
cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote" >> "$L"
cat "$L"
