# Prepared in session 44 (never run): the landed alternate-tiles RS kernels on the H200 (they
# ran only on an H100 in session 44).  ~420 s with a cold start.  .whl carried.
# Run as: COMMIT=<HEAD> OUT=$OUT bash tools/results/session44_call5.sh
#   0. hopper_check narrow; the fp8 and sparse GPU files; the dense file's fp8 tests; memcheck
#      of the 16-row sparse garbage-index cases.
#   1. the fp8 rows into $OUT/fp8 (tools/gpu_bench.sh): predicted dense fp8_ds_mla b128 h16
#      222.7 -> 175-190 us, fp8 212.0 -> 165-180, sparse h16 73.4 -> 64-70, h32 105.4 flat.
#   2. next_narrow_alternate_ahead.patch (the alternate kernels lost session 43's per-step
#      pipelining: FRAG_BUFS and RAW_AHEAD were keyed on CONSUMERS == 1, and the alternate
#      kernels have two; the patch makes them 3 / true again, no spills, CPU-checked):
#      checked (rs_checks), then two rounds of the fp8 rows beside the landed tree.
#      Predicted: the math alone (nocopy) -10 to -15% (session 43: raw_ahead -13-16%, three
#      groups -3% when the math bounded); the full rows -0 to -8% on the H200, where the
#      copies alone take 163 / 170 us.
#   3. what bounds them (nomath: the copies alone; nocopy: the math alone), in the patched
#      tree if it passed its checks, else the landed one.
. tools/results/device_steps.sh
begin_call
rs_checks landed 45
mkdir -p "$OUT/fp8"
(OUT=$OUT/fp8 timeout 80 bash tools/gpu_bench.sh fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 \
   sparse_ds_mla_b128_sq1_h16 sparse_ds_mla_b128_sq1_h32 --repeats 20 > /dev/null 2>&1)
say "fp8 rows $?"
cut -c1-230 "$OUT/fp8/bench.log" | grep -v "^# wrote" >> "$L"
patched_stack /tmp/ahead ahead next_narrow_alternate_ahead.patch
(cd /tmp/ahead && rs_checks ahead 46); rc=$?
if [ $rc -eq 0 ]; then
  C="fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 sparse_ds_mla_b128_sq1_h16"
  ROUNDS=2 bench_trees . /tmp/ahead
  cd /tmp/ahead
fi
PYTHONPATH=.:tests timeout 150 python3 tools/producer_ceiling.py fp8_ds_mla_b128_h16_s8192 fp8_b128_h16_s8192 \
  sparse_ds_mla_b128_sq1_h16 --keep-mma --ablate nomath,nocopy > "$OUT/ceiling.txt" 2>&1
say "ceiling exit $?"
grep -v "^#" "$OUT/ceiling.txt" | cut -c1-160 >> "$L"
say done
