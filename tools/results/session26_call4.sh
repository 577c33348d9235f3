#!/usr/bin/env bash
# Session 26, call 4.  Device, repository root:  OUT=$OUT bash tools/results/session26_call4.sh
# Call 3: two producer warpgroups (p2) took fp8_ds_mla h16 369 -> 320 us but fp8 only
# 355 -> 349, and the fp8 producer alone (nomath) stayed at 273: not its instructions.
# Left: its copy chain (one raw tile: the next tile's copy is issued only once this one
# was read, then waited for after ~0.3 us of decode).  rhp2 =
# next_narrow_halves_two_producers.patch: p2 + the raw half-tiles (three where 18 slots
# remain: fp8; ds_mla keeps two).  Predicted: fp8 nomath 273 -> 190-230 and full 349 ->
# 270-300 if the chain is it; ds_mla within 3% of p2.  Also p2's nomath+nocopy: the
# producer without its copies (the chain's share directly).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
GPU_FILE_TIMEOUT=120 checked_patch /tmp/rhp2 next_narrow_halves_two_producers.patch rhp2 narrow fp8 sparse
patched /tmp/p2 next_narrow_two_producers.patch
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192"
for r in 1 2; do
  echo "== HEAD ($r)" >> "$L"; PYTHONPATH=. BENCH_TIMEOUT=120 bench; say bench
  echo "== p2 ($r)" >> "$L"; (cd /tmp/p2 && PYTHONPATH=. BENCH_TIMEOUT=120 bench); say bench
  echo "== rhp2 ($r)" >> "$L"; (cd /tmp/rhp2 && PYTHONPATH=. BENCH_TIMEOUT=120 bench); say bench
done
(cd /tmp/rhp2 && PYTHONPATH=.:tests timeout 120 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 \
  --keep-mma --ablate idle,nomath,nomath+nocopy >> "$L" 2>&1); say "rhp2 sides exit $?"
(cd /tmp/p2 && PYTHONPATH=.:tests timeout 120 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 \
  --keep-mma --ablate nomath+nocopy >> "$L" 2>&1); say "p2 nocopy exit $?"
cat "$L"
