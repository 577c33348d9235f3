#!/usr/bin/env bash
# Prepared in session 23 (not run).  Device, repository root, .whl carried:
#   COMMIT=<HEAD> OUT=$OUT bash tools/results/next_session24_call1.sh
# Session 23's last landing (4874226: the next job's first slot lookups at the last job's
# last tile) beside FlashMLA, and the fp8 / hardening GPU files on it (only the sparse file
# and memcheck ran on it).  Expected (call 8, HEAD / it): b128 s_q1 h128 ~176.6 us against
# FlashMLA's ~181 (~1.03); s_q2 ~338 against ~350 (~1.04); b64 s_q2 ~176 against ~181.
# Then qp = next_pair_q_prefetch.patch (CPU-checked: no spills): the producer prefetches the
# next job's Q rows into L2 (one cp.async.bulk.prefetch a job) for warpgroup 0's load of them
# after the job's last P V.  Prediction: -0.5 to -1 us a job boundary if Q, not the next
# job's first tile, is what the math warpgroups wait for after call 8 (s_q1 ~-0.5, s_q2 ~-2).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warm.txt 2>&1; say "warm: $(head -1 /tmp/warm.txt)"
peer_sparse_rows
gpu_files HEAD fp8 hardening
patched /tmp/qp next_pair_q_prefetch.patch
K="mla_decode_fp8_ds_mla_null_sparse_fold0_hopper_pair mla_decode_fp8_ds_mla_causal_sparse_fold0_hopper_pair"
warm_kernels /tmp/qp; say "warm qp pair"
if check_tree /tmp/qp qp pair; then
  (cd /tmp/qp && gpu_files qp sparse && memcheck_sparse qp)   # what landing it needs besides the timing
  C="sparse_ds_mla_b128_sq1_h128 sparse_ds_mla_b128_sq2_h128 sparse_ds_mla_b64_sq2_h128"
  compare_rounds qp /tmp/qp
fi
cat "$L"
