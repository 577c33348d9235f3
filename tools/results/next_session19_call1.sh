#!/usr/bin/env bash
# Prepared in session 18 (CPU-checked; not run).  Device, repository root:
#   OUT=$OUT bash tools/results/next_session19_call1.sh
# Four patches, each on HEAD, and all together (every variant compiles without spills,
# 239-251 registers in the seesaw; the CPU tests pass on each and on all four):
#  sg = next_seesaw_segments.patch: segment mode for the seesaw (grid (row tiles, SMs / row
#       tiles, 1), every row tile on the same shares; a segment at a time with its mbarriers
#       initialised again; partials share + sequence of row tiles x 64 rows; the epilogue's
#       place read from shared memory, 242 registers).  Session 18's phase probe: ds h128
#       ragged ran 256 CTAs in two waves (the last started at 216-264 us), span 320 us
#       against 254 us of tiles an SM.  Prediction: ds h128 ragged 345 -> ~300 us; varlen
#       -2 to -5%; ds h128 uniform and b32 h128 within 2% (the aligned cut runs them as the
#       splits did); b128 h128 0 to +2% (a combine with nothing to merge).
#  ss = next_seesaw_p_shared.patch: the P a warpgroup hands the other goes to shared memory
#       as an SS wgmma's A operand (stmatrix, 128-byte swizzle; FlashMLA's exchange) instead
#       of fragments read back with LDS before an RS wgmma.  Session 17's hotspots put the
#       LDS and the wait for it before WARPGROUP.ARRIVE at ~4% of the seesaw's samples;
#       registers 244 -> 239.  Prediction: the seesaw rows -2 to -4%.
#  pd = next_seesaw_page_div.patch: warp 0's page lookups and refills divide by page_size
#       with PageDiv's multiply-high instead of a run-time division (HGMMA span 9052 -> 8684
#       instructions, 17 fewer divisions with their BSSY/BSYNC).  Session 17's hotspots:
#       gmma stalls at the first HGMMA after warp 0's page work (2.8 k of 58.5 k samples).
#       Prediction: the seesaw rows -1 to -3%.
#  cw = next_combine_warp_rows.patch: where a combine row gets one group (P <= 4, segment
#       mode's and balanced splits' combines), eight rows a CTA, a warp each, the one
#       group's sums bit for bit (64 registers).  Session 18's kernel times: our combine 23
#       us on ds h128 ragged (FlashMLA 11.5), 13.7 on b32 h128 (8.0), 8.0 with nothing to
#       merge (3.0).  Prediction: b32 h128 -3 to -5 us, ds h128 -3 to -8 us, ds h32 ragged
#       -1 to -3 us; b8 h16 (P = 16: the CTA-a-row combine) unchanged.
#  all = sg + ss + pd + next_combine_warp_rows_after_segments.patch (cw rebased on sg).
# Each checked first (hopper_check --schedule seesaw; combine_check for cw and all), then
# two rounds beside HEAD.  The new GPU tests: next_session19_call2.sh.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched
patched /tmp/sg next_seesaw_segments.patch
patched /tmp/ss next_seesaw_p_shared.patch
patched /tmp/pd next_seesaw_page_div.patch
patched /tmp/cw next_combine_warp_rows.patch
patched /tmp/all next_seesaw_segments.patch && (cd /tmp/all && git apply tools/results/next_seesaw_p_shared.patch \
  && git apply tools/results/next_seesaw_page_div.patch && git apply tools/results/next_combine_warp_rows_after_segments.patch) \
  || say "apply all failed"
# the benched rows' kernels, compiled into CuPy's cache beside the checks (a bench round
# that compiles them itself can run past its timeout)
K="mla_decode_bf16_causal_dense_fold0_hopper_seesaw mla_decode_bf16_causal_dense_fold0_hopper
   mla_decode_bf16_causal_dense_fold0_m16_hopper_narrow mla_decode_bf16_causal_dense_fold0_m32_hopper_narrow
   mla_combine_bf16"
for d in . /tmp/sg /tmp/ss /tmp/pd /tmp/cw /tmp/all; do
  for k in $K; do
    (cd $d && PYTHONPATH=. timeout 200 python3 -c "from mla_cupy.compiler import get_kernel; get_kernel('$k')" \
      > /dev/null 2>&1 || echo "warm $d $k failed" >> "$L") &
  done
done
for d in sg ss pd all; do
  (cd /tmp/$d && PYTHONPATH=. timeout 210 python3 tools/hopper_check.py --schedule seesaw > $OUT/check_$d.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_$d.txt) &
done
for d in cw all; do
  (cd /tmp/$d && PYTHONPATH=.:tests timeout 150 python3 tools/combine_check.py > /tmp/combine_$d.txt 2>&1; \
   echo "[exit $?]" >> /tmp/combine_$d.txt) &
done
wait
for d in cw all; do echo "== $d" >> $OUT/combine.txt; cat /tmp/combine_$d.txt >> $OUT/combine.txt; done
for d in sg ss pd all; do say "check $d: $(grep -h 'correctness\|CRASH\|exit' $OUT/check_$d.txt | tr '\n' ' ')"; done
for d in cw all; do say "combine_check $d: $(tail -2 /tmp/combine_$d.txt | tr '\n' ' ')"; done
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096 b128_sq2_h128_varlen_causal ds_h32_sq1_ragged ds_h16_sq1_uniform b8_h16_s8192"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; BENCH_TIMEOUT=100 PYTHONPATH=. bench; say bench
  for d in sg ss pd cw all; do
    echo "== $d ($r)" >> "$L"; (cd /tmp/$d && BENCH_TIMEOUT=100 PYTHONPATH=. bench); say bench
  done
done
# The seesaw at 64 rows (DeepSeek h=64 runs the ring, balanced splits): forced, in segment
# mode on sg and all.  The ring's 32-key tiles beat the seesaw's by ~3% a tile (session 5);
# segment mode's balance is worth more on ragged batches.  Prediction: ds h64 ragged 216 ->
# 195-205 us; uniform within 3% of the ring's 191.6.
C="ds_h64_sq1_ragged ds_h64_sq1_uniform"
echo "== HEAD (the ring)" >> "$L"; BENCH_TIMEOUT=100 PYTHONPATH=. bench; say bench
for d in sg all; do
  echo "== $d forced seesaw" >> "$L"; (cd /tmp/$d && MLA_CUPY_HOPPER_SCHEDULE=seesaw BENCH_TIMEOUT=100 PYTHONPATH=. bench); say bench
done
cat "$L"
