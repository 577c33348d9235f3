#!/usr/bin/env bash
# Session 40, call 5 (device, repository root, .whl carried):
#   COMMIT=<this commit> OUT=$OUT bash tools/results/session40_call5.sh
# 1. Compile time of the Hopper family as it now stands (the README's figures, 2026-12-01,
#    predate the seesaw's loading warpgroup and its twins): tools/compile_times.py
#    --match readme, one variant of every schedule and twin, cold (fresh CuPy cache) and
#    warm (a new process on it).  Prediction: cold 2-5 s each (the 2-core CPU machine's
#    NVRTC 12.9 took 4.5-5.4 s for the seesaw), warm ~1-2 ms after the first.
# 2. Every README peer row at this commit (session 38's table is at 718e829; since then the
#    seesaw's epilogue staged over the tiles and the walk / Q copy written once, each
#    measured within run-to-run spread).  Prediction: every ratio within +-0.02 of
#    session 38's.
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 150 python3 tools/compile_times.py --match readme --json "$OUT/compile_times.json" \
  > "$OUT/compile_times.txt" 2>&1
say "compile_times exit $?"
cat "$OUT/compile_times.txt" >> "$L"
PEER_TIMEOUT=260 peer_all_rows
cat "$L"
