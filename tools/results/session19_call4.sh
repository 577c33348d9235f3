#!/usr/bin/env bash
# Session 19, call 4 (device, repository root):  OUT=$OUT bash tools/results/session19_call4.sh
# Why did segment mode for the seesaw (call 1's sg: ds h128 ragged 347 -> 343 us, predicted
# ~300; uniform and b128 +3%) miss?  The patch rebased on HEAD (PageDiv, warp-row combine):
#  - phase_probe on HEAD and sg: CTA end-time spread (is the batch balanced?), us a tile,
#    the rest of a CTA (segment mode: the last segment's phases);
#  - bench HEAD, sg, and sg with MLA_CUPY_SPLIT=partitions (the patch's kernel in split
#    mode: do its code changes alone cost?).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched
patched /tmp/sg next_seesaw_segments_on_aba21e8.patch
for d in . /tmp/sg; do
  for k in mla_decode_bf16_causal_dense_fold0_hopper_seesaw mla_combine_bf16 mla_combine_bf16_warp_rows; do
    (cd $d && PYTHONPATH=. timeout 200 python3 -c "from mla_cupy.compiler import get_kernel; get_kernel('$k')" \
      > /dev/null 2>&1 || echo "warm $d $k failed" >> "$L") &
  done
done
(cd /tmp/sg && PYTHONPATH=. timeout 200 python3 tools/hopper_check.py --schedule seesaw --quick > $OUT/check_sg.txt 2>&1; \
 echo "[exit $?]" >> $OUT/check_sg.txt) &
wait
say "check sg: $(grep -h 'correctness\|CRASH\|exit' $OUT/check_sg.txt | tr '\n' ' ')"
P="ds_h128_sq1_ragged ds_h128_sq1_uniform"
PYTHONPATH=.:tests timeout 150 python3 tools/phase_probe.py --cases $P > $OUT/phases_head.txt 2>&1; say "probe head $?"
(cd /tmp/sg && PYTHONPATH=.:tests timeout 150 python3 tools/phase_probe.py --cases $P > $OUT/phases_sg.txt 2>&1); say "probe sg $?"
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. bench; say bench
  echo "== sg ($r)" >> "$L"; (cd /tmp/sg && PYTHONPATH=. bench); say bench
  echo "== sg split=partitions ($r)" >> "$L"; (cd /tmp/sg && MLA_CUPY_SPLIT=partitions PYTHONPATH=. bench); say bench
done
cat "$L"; cat $OUT/phases_head.txt $OUT/phases_sg.txt | cut -c1-200
