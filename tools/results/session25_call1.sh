#!/usr/bin/env bash
# Session 25, call 1.  Device, repository root, .whl carried:
#   COMMIT=02686ab OUT=$OUT bash tools/results/session25_call1.sh
# 1. bw (Timer.gpu_us warms the GPU ~50 ms before each implementation; landed as 02686ab)
#    against the tree without it, on the four short rows beside the peers.  Hypothesis
#    (NOTES session 24): the peer run's b1 h128 64.6 us vs 52 in a plain bench is ours timed
#    first on an idle GPU.  Predicted with bw: b1 ~52-55, b32 ~80-82; peers unchanged.
# 2. The peer run at HEAD (every README row; slack + P(a)' as is + bw).
# 3. rs (next_raw_scores.patch) checked on the seesaw and the pair; then HEAD, sg
#    (next_seesaw_segments_continuous.patch v2) and rs, two rounds on six seesaw rows
#    (predicted: rs -0.5 to -1.5%; sg ragged 282 -> 250-265 if a boundary falls to ~5 us).
# 4. The phase probe on sg and HEAD: ragged and b1.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
rm -rf /tmp/nobw && cp -r . /tmp/nobw && (cd /tmp/nobw && git apply -R tools/results/next_bench_warm.patch) || say "nobw failed"
patched /tmp/sg next_seesaw_segments_continuous.patch
patched /tmp/rs next_raw_scores.patch
for d in /tmp/nobw .; do
  (cd $d && timeout 150 bash tools/gpu_bench.sh b8_h16_s8192 b32_h128_s4096 b1_h128_s65536 ds_h128_sq1_uniform \
    --repeats 20 > /dev/null 2>&1; say "$d peer bench $?"; cut -c1-230 "$OUT/bench.log" | grep -v "^# wrote" >> "$L")
done
PEER_TIMEOUT=220 peer_all_rows
C="ds_h128_sq1_ragged ds_h128_sq1_uniform b128_h128_s8192 b32_h128_s4096 b1_h128_s65536 b128_sq2_h128_varlen_causal"
if check_tree /tmp/rs rs seesaw && check_tree /tmp/rs rs_pair pair; then T="/tmp/sg /tmp/rs"; else T="/tmp/sg"; fi
C2="$C sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128"
for r in 1 2; do
  for d in . $T; do
    echo "== $d ($r)" >> "$L"; (cd $d && C="$C2" && PYTHONPATH=. BENCH_TIMEOUT=120 bench); say bench
  done
done
for d in /tmp/sg .; do
  (cd $d && PYTHONPATH=.:tests timeout 90 python3 tools/phase_probe.py --cases ds_h128_sq1_ragged b1_h128_s65536 \
    > /tmp/ph.txt 2>&1; say "$d phases exit $?"; echo "== $d" >> $OUT/phases.txt; cat /tmp/ph.txt >> $OUT/phases.txt)
done
cat "$L"
