#!/usr/bin/env bash
# Session 30, call 3.  Device, repository root:  OUT=$OUT bash tools/results/session30_call3.sh
# Call 2's phases (b8 h16): 3.7 us entry -> prologue done, then 4.0 us before the loader's
# first copies, where one DRAM round (the page id) was expected (~1.3 us: Q's cp.async took
# 1.4).  Finer stamps (tools/narrow_phases.py: the scan's steps, the loader's segment and
# first page id) on HEAD and on next_shares_first_loads.patch.
# Prediction: batch_size ~1.3 us, each scan pass ~0.3-1 us; the loader's segment found
# ~0.5 us (L1/L2 hits), its page ~1.3 us.  And the same with Q and the metadata read back
# into L2 after the flush (--warm data: only the kernel's code cold) and without the flush
# (--warm all): if the chain is instruction fetch (the code flushed from L2 with the data),
# `data` stays near `none`; if it is the metadata's DRAM rounds, `data` falls to `all`.
set -u
export PYTHONUNBUFFERED=1
. tools/results/device_steps.sh
begin_call
patched /tmp/fl next_shares_first_loads.patch
for w in none data all; do
  PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 16 --warm $w --cases b8_h16_s8192 >> "$L" 2>&1
  say "phases $w exit $?"
done
PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 16 --cases b128_h16_s8192 >> "$L" 2>&1
(cd /tmp/fl && PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 16 --cases b8_h16_s8192 >> "$L" 2>&1)
say "fl phases exit $?"
# next_compact_code.patch: the loader's chunk loop and the shares' scan loops not unrolled
# (`#pragma unroll 1`), and the epilogue's stores with one branch a row and one for the
# destination (not one a store): the loader's code from its first copy to its tile's last
# 7.9 KB -> ~1 KB, the kernel 8778 -> 7741 SASS lines.  If call 2's 4.0 us before the loader's first
# copies is instruction fetch (the code flushed from L2 with the data), prediction: the
# loader's entry -> tile 0 issued 4.0 -> ~2 us, b8 h16 43.3 -> ~41.5 us; b128 h16 and the
# DeepSeek rows flat (the loader is not their bound).
patched /tmp/cc next_compact_code.patch
(cd /tmp/cc && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm_cc.txt 2>&1)
say "warm cc: $(head -1 /tmp/warm_cc.txt)"
check_tree /tmp/cc cc narrow
(cd /tmp/cc && PYTHONPATH=.:tests timeout 60 python3 tools/narrow_phases.py --rows 16 --cases b8_h16_s8192 >> "$L" 2>&1)
C="b8_h16_s8192 b128_h16_s8192 ds_h16_sq1_uniform ds_h16_sq1_ragged ds_h32_sq1_uniform" BENCH_TIMEOUT=80 bench_trees . /tmp/cc
cat "$L"
