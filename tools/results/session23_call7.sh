#!/usr/bin/env bash
# Session 23, call 7.  Device, repository root, .whl carried:
#   COMMIT=<HEAD> OUT=$OUT bash tools/results/session23_call7.sh
# The pair's partials in the split model (PAIR_PARTIAL_COST 1.4, fitted to calls 1, 2 and 6's
# sweeps): b2 s_q2 h128 chooses P=8 (call 6: 26.5 us against the chosen 11's 28.1), the other
# small batches keep theirs.  Prediction: b2 s_q2 ~26.5 us, ~0.89 of FlashMLA.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair"
warm_kernels .; say warm
S=sparse_ds_mla
PYTHONPATH=.:tests timeout 60 python3 tools/split_sweep.py ${S}_b2_sq2_h128:8,11 ${S}_b4_sq2_h128:8 ${S}_b1_sq1_h128:16 \
  >> "$L" 2>&1; say "sweep $?"
(bash tools/gpu_bench.sh sparse_ds_mla_b2_sq2_h128 --repeats 30 > /dev/null 2>&1); say "peer bench $?"
cut -c1-230 $OUT/bench.log | grep -v "^# wrote" >> "$L"
cat "$L"
