#!/usr/bin/env bash
# Session 34, call 2 (prepared in session 33; device, repository root, .whl carried):
#   OUT=$OUT COMMIT=<HEAD> bash tools/results/next_session34_call2.sh
# 1. The ring's sparse / fp8 rows, HEAD against the ring template of session 33's start
#    (next_ring_before_segments.patch: its SASS is 27ff140's), two rounds.  Prediction:
#    within 1% (SEGMENTS is false there; the loop skeleton changed).
# 2. Every README row beside the peers.  Prediction: DeepSeek h64 ragged ~0.95, h32 ragged
#    ~0.98, h16 s_q2 ragged ~0.99, the others as at b3766f8 / 65ab684.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/before next_ring_before_segments.patch
C="sparse_ds_mla_b128_sq1_h64 sparse_bf16_b128_sq1_h128 fp8_ds_mla_b128_h128_s8192 fp8_b128_h128_s8192"
BENCH_TIMEOUT=150 bench_trees . /tmp/before
PEER_TIMEOUT=$((590 - SECONDS + T0)) peer_all_rows
cat "$L"
