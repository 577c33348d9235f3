#!/usr/bin/env bash
# Session 33, call 4 (device, repository root):  OUT=$OUT bash tools/results/session33_call4.sh
# Call 3: the ring's segment mode is correct (dense file 93 passed) but 1-2% slower than
# balanced splits on the ragged rows (h64 206 vs 202 us), equal on uniform ones
# (predicted -5 to -8% ragged: missed).  Where does a share's time go?
# 1. tools/ring_probe.py (new): CTA end times by segment count, us a ring tile, a CTA's
#    start, a boundary (loop end -> next Q in), segment mode and split mode.
#    Prediction: a boundary ~3-5 us; the CTAs of 3 segments end last.
# 2. next_ring_seg_qprefetch.patch (the producer prefetches a segment's Q into L2 when
#    it starts its tiles, a few tiles before warpgroup 0 copies it): two rounds beside
#    HEAD, segments; its probe.  Prediction: a boundary -1 to -2 us, ragged rows -0.5 to -1%.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
for split in segments auto; do
  echo "== probe $split" >> "$L"
  MLA_CUPY_SPLIT=$split PYTHONPATH=.:tests timeout 90 python3 tools/ring_probe.py ds_h64_sq1_ragged \
    ds_h64_sq1_uniform ds_h32_sq1_ragged >> "$L" 2>&1
done
say "probes"
patched /tmp/qp next_ring_seg_qprefetch.patch
C="ds_h64_sq1_ragged ds_h32_sq1_ragged ds_h16_sq2_ragged"
for r in 1 2; do
  echo "== HEAD segments ($r)" >> "$L"; MLA_CUPY_SPLIT=segments PYTHONPATH=. bench
  echo "== qp segments ($r)" >> "$L"; (cd /tmp/qp && MLA_CUPY_SPLIT=segments PYTHONPATH=. BENCH_TIMEOUT=120 bench)
  echo "== HEAD auto ($r)" >> "$L"; MLA_CUPY_SPLIT=auto PYTHONPATH=. bench
  say "round $r"
done
echo "== probe qp segments" >> "$L"
(cd /tmp/qp && MLA_CUPY_SPLIT=segments PYTHONPATH=.:tests timeout 60 python3 tools/ring_probe.py ds_h64_sq1_ragged >> "$L" 2>&1)
cat "$L"
