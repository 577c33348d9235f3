#!/usr/bin/env bash
# One device call for the six patches prepared on 2026-12-01 (sixth session), each
# checked against the reference before it is timed, all timed in the same run as HEAD:
#   next_combine_first_rows.patch, next_seesaw_l2_prefetch.patch, next_ds_mla_l2_prefetch.patch,
#   next_seesaw_p1_before_rescale.patch (conflicts textually with the L2 prefetch: one line apart),
#   next_sparse_producer.patch (conflicts with next_ds_mla_l2_prefetch.patch: fold that one into
#   the producer's loop if both win), next_ranking_batch_clamp.patch (checked only: it changes
#   nothing a valid call does)
# Usage (device machine, repository root, .whl not needed):
#   OUT=$OUT bash tools/results/next_session_run.sh     (about 8 minutes; run it with timeout_s 600)
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1
L=$OUT/log.txt
C=/tmp/checks; mkdir -p $C
: > "$L"
declare -A PATCH=([combine]=next_combine_first_rows.patch [seesaw_pf]=next_seesaw_l2_prefetch.patch
                  [dsmla_pf]=next_ds_mla_l2_prefetch.patch [p1_first]=next_seesaw_p1_before_rescale.patch
                  [producer]=next_sparse_producer.patch [clamp]=next_ranking_batch_clamp.patch)
for v in "${!PATCH[@]}"; do
  rm -rf /tmp/$v && cp -r . /tmp/$v && (cd /tmp/$v && git apply tools/results/${PATCH[$v]}) || echo "$v: patch failed" >> "$L"
done
# correctness first, in parallel (most of it is NVRTC on the CPU)
for v in "${!PATCH[@]}"; do
  ( cd /tmp/$v && timeout 150 python3 tools/hopper_check.py --quick > $C/check_$v.txt 2>&1
    echo "[exit $?]" >> $C/check_$v.txt ) &
done
( cd /tmp/combine && timeout 150 python3 tools/combine_check.py > $C/combine_check.txt 2>&1 ) &
wait
for v in "${!PATCH[@]}"; do echo "== check $v: $(grep -h 'correctness:' $C/check_$v.txt)" >> "$L"; done
tail -3 $C/combine_check.txt >> "$L"
DENSE="b128_h16_s8192 b128_h128_s8192 b128_sq2_h128_varlen_causal b1_h128_s65536 b8_h16_s8192 b32_h128_s4096"
SPARSE="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq1_h64 sparse_ds_mla_b2_sq2_h128"
bench() { (cd $1 && timeout 200 python3 tools/bench.py $2 --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-120); }
echo "== HEAD" >> "$L"; bench . "$DENSE $SPARSE" >> "$L"
grep -q "combine check: 0 failures" $C/combine_check.txt || sed -i "s/correctness: 0 failures/combine check failed/" $C/check_combine.txt
for v in combine seesaw_pf p1_first; do
  grep -q "correctness: 0 failures" $C/check_$v.txt && { echo "== $v" >> "$L"; bench /tmp/$v "$DENSE" >> "$L"; }
done
grep -q "correctness: 0 failures" $C/check_dsmla_pf.txt && { echo "== dsmla_pf" >> "$L"; bench /tmp/dsmla_pf "$SPARSE" >> "$L"; }
# the producer kernel: a hang shows as a timeout of its check (kept short)
grep -q "correctness: 0 failures" $C/check_producer.txt && { echo "== producer" >> "$L"; bench /tmp/producer "$SPARSE sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b128_sq1_h16" >> "$L"; }
echo "== HEAD again" >> "$L"; bench . "b128_h128_s8192 b1_h128_s65536 b32_h128_s4096 sparse_ds_mla_b128_sq1_h128" >> "$L"
# where the pair loop's time goes (HEAD), and the seesaw phases with the prefetch
echo "== pair probe (HEAD)" >> "$L"; timeout 60 python3 tools/phase_probe.py --pair 10 >> "$L" 2>&1
echo "== phase probe (seesaw_pf)" >> "$L"; (cd /tmp/seesaw_pf && timeout 60 python3 tools/phase_probe.py) >> "$L" 2>&1
# every check log, for a failure
cat $C/*.txt > $OUT/checks.txt
