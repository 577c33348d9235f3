#!/usr/bin/env bash
# Session 37, call 1 (device, repository root):  OUT=$OUT bash tools/results/session37_call1.sh
# Tree: 5aea63b's code (the kernels of e3d5c2f).
# 1. The forced-portable GPU files (MLA_CUPY_BACKEND=portable), owed since session 36's twin
#    (e3d5c2f).  Prediction: all pass (dense 90, sparse 31, fp8 12 as session 33; the counts
#    may have grown with tests added since).
# 2. (prepared in session 36 as next_session37_call1.sh) session36_loader_probe2.py with the L2 flushed ("none") and not
#    ("all") on the _pf tree.  Prediction: if the start's no-memory steps are cold code they
#    shrink from 0.7-0.9 us to <= 0.2 us each under "all".
# 3. (prepared as next_session37_call2.sh) phase_probe phases at b1 on HEAD and _pf (prediction: the same
#    loop time a tile; b1's extra ~1 us in the CTAs' end spread or the epilogue), and the
#    seesaw's pair hand-overs (--pair 3, --per-warp) at DeepSeek h128 uniform and b128 h128
#    (prediction: warpgroup 1's wait for P(a) or warpgroup 0's for the buffer's release,
#    ~150-250 clocks a pair).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
PORTABLE_TIMEOUT=260 portable dense sparse fp8
say "portable files"
patched /tmp/ft2 next_seesaw_first_tile_in_setup_pf.patch
(cd /tmp/ft2 && WARMS="none all" PYTHONPATH=.:tests timeout 120 python3 tools/results/session36_loader_probe2.py >> "$L" 2>&1)
say "loader probe 2 $?"
for t in . /tmp/ft2; do
  echo "== phases $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --cases b1_h128_s65536 b1_h128_s65536:64 >> "$L" 2>&1)
done
say "b1 phases"
for c in ds_h128_sq1_uniform b128_h128_s8192; do
  echo "== pair 3 $c" >> "$L"
  PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --pair 3 --cases $c >> "$L" 2>&1
  PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --pair 3 --per-warp --cases $c >> "$L" 2>&1
done
say "pair probes"
cat "$L"
