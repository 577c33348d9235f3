#!/usr/bin/env bash
# Session 38, call 2:  OUT=$OUT bash tools/results/session38_call2.sh
# HEAD: the seesaw's `_multicast` twin landed with its floor (compiler.takes_multicast: a
# split of >= 32 tiles; call 1: b1 h128 at 16 tiles a split +4.5% on the twin).  Checks:
# hopper_check seesaw, the twin's GPU tests.  Then two patches on it:
# - next_seesaw_parallel_mbar_init.patch (/tmp/pmi): the 22 mbarriers made by 22 lanes of the
#   loading warpgroup's first warp, not in turn by thread 0 (session 36: "mbarriers made"
#   ~0.9 us of the set-up).  Prediction: phase_probe --start's set-up -0.3 to -0.8 us at b1 /
#   b32; b1 and b32 -1 to -2% if the first copies' time moves the rows; long rows flat.
# - next_seesaw_twin_no_l2_ahead.patch (/tmp/noa): the twin without the L2 prefetch a pair
#   ahead where its cluster is the only reader of the keys (group_tiles 2: s_q 1 h128).
#   Session 35 found that prefetch cost 11% where one row tile reads a split's keys; the
#   twin's cluster reads each box once, like one row tile.  Prediction: h128 s_q 1 rows
#   (DeepSeek uniform / ragged, b128, b32) -2 to -8% if that carries over, slower if the
#   prefetch is what hides HBM's latency here; varlen (group_tiles 4) and b1 (plain) flat.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
check_tree . head seesaw
PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py -k multicast \
  > $OUT/gpu_head_multicast.log 2>&1
say "head dense -k multicast exit $?: $(tail -1 $OUT/gpu_head_multicast.log)"
patched /tmp/pmi next_seesaw_parallel_mbar_init.patch   # (now 2026-12-04i_dropped_seesaw_parallel_mbar_init.patch)
patched /tmp/noa next_seesaw_twin_no_l2_ahead.patch   # (now 2026-12-04i_dropped_seesaw_twin_no_l2_ahead.patch)
(cd /tmp/pmi && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_pmi.txt 2>&1) &
(cd /tmp/noa && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_noa.txt 2>&1) &
wait
say "warm: $(head -1 /tmp/warm_pmi.txt) / $(head -1 /tmp/warm_noa.txt)"
check_tree /tmp/pmi pmi seesaw
check_tree /tmp/noa noa seesaw
for t in . /tmp/pmi; do
  echo "== start $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --start --cases b1_h128_s65536 b32_h128_s4096 >> "$L" 2>&1)
done
say "start probes"
C="ds_h128_sq1_uniform ds_h128_sq1_ragged b128_h128_s8192 b128_sq2_h128_varlen_causal b32_h128_s4096 b1_h128_s65536" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/pmi /tmp/noa
cat "$L"
