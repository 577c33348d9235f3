#!/usr/bin/env bash
# Session 18, call 3 (device, repository root; .whl carried):
#   OUT=$OUT bash tools/results/next_session18_call3.sh
# Two balanced-split patches, each applied to HEAD:
#  br = next_balanced_ragged_even.patch: a ragged batch (some sequence more than 1/16 over
#       the mean keys) is cut into grid y's (2P's) even splits per sequence instead of splits
#       of the batch's mean over P.  The mean rule leaves about B/2 more CTAs than one wave
#       holds (each sequence rounds up to whole splits): DeepSeek h64 ragged 264 us against
#       forced P=4's 210 (session 16).  A makespan model (1 CTA an SM, longest first, per CTA
#       8.8 us + 0.0447 us a key, fitted to h64 uniform P=2 / P=4) gives 282 -> 215.
#       Prediction: ds h64 ragged 264 -> 205-220 us; ds h128 ragged 337 -> ~332 (forced
#       P=2's); uniform rows and b32 h128 within 1%.
#  bp = next_balanced_place.patch: br, and a batch that is not ragged runs the host's P
#       splits of every sequence in the first P x B CTAs of launch order, unranked, the
#       (empty) rest after them (balanced_place).  Prediction: the uniform one-wave rows
#       regain the 3-4% balanced mode cost them (ds h64 uniform 192 -> ~185, ds h128
#       uniform 290 -> ~279, b32 h128 103 -> ~100); ragged rows as br.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench, patched
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && say "peers installed"
patched /tmp/br next_balanced_ragged_even.patch
patched /tmp/bp next_balanced_place.patch
(cd /tmp/bp && PYTHONPATH=. timeout 200 python3 tools/warm_kernel_cache.py --jobs 12 > $OUT/warm.txt 2>&1) &
for s in ring seesaw; do
  (cd /tmp/br && PYTHONPATH=. timeout 150 python3 tools/hopper_check.py --schedule $s > $OUT/check_br_$s.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_br_$s.txt) &
done
wait; say "warm: $(tail -1 $OUT/warm.txt)"
for s in ring seesaw; do
  (cd /tmp/bp && PYTHONPATH=. timeout 100 python3 tools/hopper_check.py --schedule $s > $OUT/check_bp_$s.txt 2>&1; \
   echo "[exit $?]" >> $OUT/check_bp_$s.txt) &
done
wait
for f in $OUT/check_b*.txt; do say "$(basename $f): $(grep -h 'correctness\|CRASH\|exit' $f | tr '\n' ' ')"; done
C="ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h128_sq1_ragged ds_h128_sq1_uniform b32_h128_s4096"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; BENCH_TIMEOUT=120 PYTHONPATH=. bench; say bench
  echo "== br ragged even ($r)" >> "$L"; (cd /tmp/br && BENCH_TIMEOUT=120 PYTHONPATH=. bench); say bench
  echo "== bp place ($r)" >> "$L"; (cd /tmp/bp && BENCH_TIMEOUT=120 PYTHONPATH=. bench); say bench
done
echo "== bp beside FlashMLA" >> "$L"
(cd /tmp/bp && PYTHONPATH=.:/tmp/site timeout 150 python3 tools/bench.py $C --repeats 20 --check-seqs 2 --peer flashmla \
  --json $OUT/bench_bp_flashmla.json 2>&1 | grep -v "^#" | cut -c1-160 >> "$L"); say "peer bench exit $?"
(cd /tmp/bp && PYTHONPATH=.:tests timeout 120 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "balanced or longest_first" > $OUT/tests.txt 2>&1); say "bp balanced tests exit $? $(tail -1 $OUT/tests.txt)"
cat "$L"
