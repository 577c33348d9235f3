#!/usr/bin/env bash
# Session 38, call 1 (prepared in session 37 after its device budget; CPU-checked, not run):
#   OUT=$OUT bash tools/results/next_session38_call1.sh
# Session 37 found the seesaw's pair (~5,500 clocks against ~4,350 of tensor work) bound by its
# refills: release -> landed 1,600-2,600 clocks, of which the loading warp's issue ~550-900
# (64-row boxes, 3a7e28d) and the flight from L2 700-1,700.  Two prepared changes:
# - next_seesaw_lean_issue.patch (/tmp/lean): the copies' coordinates computed before the
#   empty wait, and with one box a chunk lane 0 arms each chunk just before its copy (no
#   arrivals by several lanes, no __syncwarp between the wait and the first copy).
#   Prediction: the refill probe's issue -200 to -300 clocks a half; h128 rows -1 to -2%.
# - next_seesaw_l2_prefetch_lines.patch (/tmp/lines): the L2 prefetch a pair ahead as 576
#   prefetch.global.L2 lines from the warp's 32 lanes instead of one 73.7 KB bulk prefetch,
#   in case the bulk prefetch occupies the TMA unit that also runs the copies.  Prediction:
#   if it does, the flight -200 to -500 clocks and the h128 rows -1 to -3%; if not, flat.
# Both together spill 4 bytes in the loader (40 registers): not prepared.
# - next_seesaw_parallel_mbar_init.patch (/tmp/pmi): the 22 mbarriers made by 22 lanes of the
#   loading warpgroup's first warp, not in turn by thread 0 (session 36: "mbarriers made"
#   ~0.9 us of the set-up).  Prediction: phase_probe --start's set-up barrier -0.3 to -0.8 us
#   at b1 / b32; b1 and b32 -1 to -2% if the first copies' time moves the rows (session 36:
#   moving them 0.3-1 us moved b32 by <= 1%).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/lean next_seesaw_lean_issue.patch
patched /tmp/lines next_seesaw_l2_prefetch_lines.patch
(cd /tmp/lean && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm_lean.txt 2>&1) &
(cd /tmp/lines && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm_lines.txt 2>&1) &
wait
say "warm: $(head -1 /tmp/warm_lean.txt) / $(head -1 /tmp/warm_lines.txt)"
check_tree /tmp/lean lean seesaw
check_tree /tmp/lines lines seesaw
patched /tmp/pmi next_seesaw_parallel_mbar_init.patch
check_tree /tmp/pmi pmi seesaw
for t in . /tmp/pmi; do
  echo "== start $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --start --cases b1_h128_s65536 b32_h128_s4096 >> "$L" 2>&1)
done
for t in . /tmp/lean /tmp/lines; do
  echo "== refill $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 60 python3 tools/results/session37_refill_probe.py ds_h128_sq1_uniform >> "$L" 2>&1)
done
say "refill probes"
C="ds_h128_sq1_uniform ds_h128_sq1_ragged b128_h128_s8192 b128_sq2_h128_varlen_causal b32_h128_s4096 b1_h128_s65536" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/lean /tmp/lines /tmp/pmi
cat "$L"
