#!/usr/bin/env bash
# Session 40, call 2:  OUT=$OUT bash tools/results/session40_call2.sh
# Call 1's boundary probe: a segment's first tiles wait for the epilogue (staged over the
# tile buffers, the last pair's releases kept): kept releases 3.5 us (b128 h128) / 5.7
# (DeepSeek h128 ragged) after the last pairs, the first tile issued ~1 us later, the first
# S retired at 6.9 / 9.0 us.
# next_seg_stage_over_q.patch: segment mode stages over Q's region (fp32 partials a
# 128-column half at a time), the last pair releases as the others do, so the next
# segment's first tiles land under the epilogue; its Q is prefetched into L2 at the
# epilogue's start and copied after the read-out.  Split mode's SASS is byte-identical.
# Predictions (boundary probe): first tile issued ~0.5-1 us after the pairs (was 4.7 / 6.8);
# staging read out ~ as the kept releases were (+0.3 us for the halves); Q landed ~1 us
# after the read-out; first S retired ~5.0 (b128) / ~7.2 (ragged), ~2 us sooner.  Rows
# (segments forced): ragged -1 to -1.5% against HEAD's twin, b128 -0.5 to -1%, uniform
# and b32 flat.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/q next_seg_stage_over_q.patch
(cd /tmp/q && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warmq.txt 2>&1)
say "warm q: $(head -1 /tmp/warmq.txt)"
(cd /tmp/q && PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider --maxfail=3 \
  tests/test_gpu_dense.py -k "multicast_twin or balanced_splits or schedule_reused" > $OUT/gpu_q.log 2>&1)
say "q twin tests exit $?: $(tail -1 $OUT/gpu_q.log)"
grep -E "^E " $OUT/gpu_q.log | head -10 | cut -c1-300 >> "$L"
(cd /tmp/q && memcheck_sparse q)
grep -E "FAIL|case 17 P=None" /tmp/memcheck_q.log | head -4 | cut -c1-160 >> "$L"
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096"
for r in 1 2; do
  echo "== HEAD balanced ($r)" >> "$L"; PYTHONPATH=. bench
  echo "== HEAD segments ($r)" >> "$L"; MLA_CUPY_SPLIT=segments PYTHONPATH=. bench
  echo "== q segments ($r)" >> "$L"; (cd /tmp/q && MLA_CUPY_SPLIT=segments PYTHONPATH=. bench)
  say "round $r"
done
echo "== boundary probe (q)" >> "$L"
(cd /tmp/q && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --boundary >> "$L" 2>&1)
say "boundary probe exit $?"
cat "$L"
