#!/usr/bin/env bash
# Session 22, call 7 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session22_call7.sh
# The peer run for issue 9's five FlashMLA rows at HEAD (the pair the default at h128 since
# call 5), FlashMLA beside us on the same bytes, indices and sink.  The dense rows keep
# session 21's run (no dense kernel changed since d0ffd8c: dequant16's SASS identical).
# Prediction: b128 s_q1 h128 ~0.94x (191.8 vs ~181), s_q2 ~0.94x, b64 s_q2 ~0.94x, h64 ~1.0x
#   (the ring, ~117.5 vs ~121), b2 s_q2 ~0.77x.
set -u
export PYTHONUNBUFFERED=1
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say
COMMIT=${COMMIT:-unknown} timeout 300 bash tools/gpu_bench.sh sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b128_sq1_h128 \
  sparse_ds_mla_b128_sq1_h64 sparse_ds_mla_b64_sq2_h128 sparse_ds_mla_b2_sq2_h128 --repeats 20 > /tmp/gpu_bench.txt 2>&1
say "peer bench exit $?"
cat "$L"; cut -c1-200 $OUT/bench.log
