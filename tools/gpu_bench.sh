#!/usr/bin/env bash
# One device call: install the peers' wheels carried in .whl/ (FlashMLA, FlashInfer,
# tvm-ffi; the GPU machine has no registry), then `mla-cupy bench` beside both peers.
# Usage (device machine, repository root, `.whl` carried):
#   COMMIT=<this checkout's commit, from the machine you work on: the device copy's git
#   metadata can be older than its files> bash tools/gpu_bench.sh [bench args...]
# With no bench args it runs --suite default (issue 8's and issue 9's tables).
# Writes $OUT/bench.json, $OUT/bench.log and $OUT/roofline.png (when matplotlib is there).
set -u -o pipefail
OUT=${OUT:-/tmp/mla_out}
mkdir -p "$OUT"
. "$(dirname "$0")/peer_env.sh"
[ $# -gt 0 ] || set -- --suite default
python3 tools/bench.py --peer flashmla --peer flashinfer ${COMMIT:+--commit "$COMMIT"} \
  --json "$OUT/bench.json" --plot "$OUT/roofline.png" "$@" 2>&1 | tee "$OUT/bench.log"
