# Session 48, call 2 (asked for the H200): why the TMA fp8 tiles ran slower, and the owed peer rows.
# Call 1: dense fp8 b128 h16 165.3 -> 177.6 us with next_fp8_tma_raw.patch (predicted 150-156),
# h32 flat.  Hypotheses: (a) the copies themselves are slower (144-byte unswizzled boxes at
# 144-byte offsets: rows' pieces straddle 32-byte sectors, so L2 serves ~1.2x the sectors; or
# the TMA unit's rate for such boxes); (b) the math is slower (addresses, the edge check).
#   1. producer_ceiling --keep-mma --ablate nomath in both trees: (a) if the TMA tree's nomath
#      time rises by most of the 12 us, (b) if it stays at HEAD's.
#   2. ncu --set full of the decode in both trees (tools/ncu_compare.py --peer none, then --raw):
#      L2 read sectors and requests, DRAM bytes, shared bank conflicts, stall reasons.
#   3. Every README peer row at HEAD (owed: the seesaw's first-factor fix d46d52f was never
#      timed; the split softmax of 05adf0a does not touch these rows).  Predicted: session 44's
#      ratios within 0.02.
# Run as: COMMIT=<HEAD> OUT=$OUT bash tools/results/session48_call2.sh   (.whl carried)
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/tma tma next_fp8_tma_raw.patch
for t in . /tmp/tma; do
  echo "== ceiling $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 90 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 --keep-mma --ablate nomath 2>&1 \
     | cut -c1-200 >> "$L")
done
say ceilings
(PYTHONPATH=. timeout 100 python3 tools/ncu_compare.py fp8_b128_h16_s8192 --peer none --out /tmp/ncu_head > /tmp/ncu_head.txt 2>&1)
say "ncu head $?: $(tail -1 /tmp/ncu_head.txt | cut -c1-200)"
(cd /tmp/tma && PYTHONPATH=. timeout 100 python3 tools/ncu_compare.py fp8_b128_h16_s8192 --peer none --out /tmp/ncu_tma > /tmp/ncu_tma.txt 2>&1)
say "ncu tma $?: $(tail -1 /tmp/ncu_tma.txt | cut -c1-200)"
cp /tmp/ncu_head/*.csv.gz $OUT/ 2>/dev/null; for f in /tmp/ncu_tma/*.csv.gz; do cp "$f" "$OUT/tma_$(basename $f)"; done
python3 tools/ncu_compare.py --raw /tmp/ncu_head/fp8_b128_h16_s8192_ours.csv.gz /tmp/ncu_tma/fp8_b128_h16_s8192_ours.csv.gz \
  --peer tma > $OUT/ncu_head_vs_tma.txt 2>&1
cut -c1-160 $OUT/ncu_head_vs_tma.txt >> "$L"
PEER_TIMEOUT=280 peer_all_rows
say done
