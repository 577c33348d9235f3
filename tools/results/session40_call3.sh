#!/usr/bin/env bash
# Session 40, call 3:  OUT=$OUT bash tools/results/session40_call3.sh
# Call 2: next_seg_stage_over_q.patch (segment mode staged over Q, the last pair's tiles
# freed at once, the next Q after the read-out) moved the first tiles to the pairs' end,
# but Q then landed 1.5-2.3 us after the read-out: first S at 8.3 / 8.8 us (ragged / b128),
# was 9.0 / 6.9; rows flat.  Not landed.
# next_seg_direct_stores.patch: segment mode stages nothing; the epilogue stores its fp32
# partial (or 16-bit output) from the fragments (8- / 4-byte stores, 32-byte sectors
# whole), so both the next Q (copied after the second epilogue barrier, as now) and the
# next segment's first tiles (the last pair frees them as every pair does) land under it.
# Split mode's SASS is byte-identical.
# Predictions (boundary probe): first tile issued ~0 us after the pairs (as call 2);
# "epilogue stored" (the stores issued) ~4-5 us (the header: fragment stores took 4-5 us a CTA);
# Q landed ~ at the same time; first S retired ~5-5.5 us (was 6.9 / 9.0).  Rows (segments
# forced) against HEAD's twin: ragged -1%, b128 -0.5%, uniform and b32 flat.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/q next_seg_direct_stores.patch
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
