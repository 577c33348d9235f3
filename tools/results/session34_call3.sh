#!/usr/bin/env bash
# Session 34, call 3 (prepared in session 33; device, repository root):
#   OUT=$OUT bash tools/results/next_session34_call3.sh
# next_ring_q_after_first_tile.patch (CPU-checked: every ring variant compiles without
# spills; the protocol model with q_free passes and catches a producer waiting for Q before
# publishing): the ring's segment boundary cost ~6.7 us (session 33's probe), most of it
# warpgroup 0 waiting for the next Q, which it loaded itself at its loop's end behind the
# producer's four tiles of the next segment (~216 KB at the SM's ~32 GB/s share).  Now the
# producer issues a segment's first tile and then its Q in one group, ahead of its other
# tiles, once warpgroup 0 frees Q (q_free, after its last S) and the last segment's last
# tile is published.
# 1. checked_patch: warm, hopper_check ring, the dense file, (memcheck sparse: no change).
#    Prediction: all pass.
# 2. The probe and two rounds beside HEAD, the ragged ring rows.  Prediction: a boundary
#    ~6.7 -> ~3.5 us; h64 ragged ~194 -> ~190, h32 / h16 s_q2 ~182 -> ~179 (the start weight,
#    SEG_START_UNITS = 3, then overweighs: a refit to 2 is the next step).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=200 checked_patch /tmp/qa next_ring_q_after_first_tile.patch qa ring dense
C="ds_h64_sq1_ragged ds_h32_sq1_ragged ds_h16_sq2_ragged ds_h64_sq1_uniform"
bench_trees . /tmp/qa
(cd /tmp/qa && PYTHONPATH=.:tests timeout 60 python3 tools/ring_probe.py ds_h64_sq1_ragged >> "$L" 2>&1)
PYTHONPATH=.:tests timeout 60 python3 tools/ring_probe.py ds_h64_sq1_ragged >> "$L" 2>&1
cat "$L"
