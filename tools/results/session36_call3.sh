#!/usr/bin/env bash
# Session 36, call 3 (prepared in session 35, ran in session 36; device, repository root):
#   OUT=$OUT bash tools/results/session36_call3.sh
# Segment boundaries' Q from L2.  Session 34's ring probe: 7.7 us from a segment's last
# tile to the next segment's Q landed (warpgroup 0 reloads Q by cp.async from DRAM, its
# address known only at the boundary); moving the Q copy to the producer's first tile
# changed nothing (call 3: a boundary is bytes).  Here the loader (ring: producer thread 0;
# narrow: the loading warp's lane 0) prefetches a later segment's Q rows into L2 with one
# cp.async.bulk.prefetch as that segment's first tiles go out, a ring of tiles (~4-5 us)
# before the math reloads Q.  SASS: one UBLKPF.L2, no spills, 168 / 155 registers.
# - next_ring_q_l2_ahead.patch (/tmp/rq), next_narrow_q_l2_ahead.patch (/tmp/nq).
# Predictions: checks 0 failures; the ring probe's boundary 7.7 -> ~4.5 us; DeepSeek h64 /
# h32 / h16 s_q2 ragged (the ring) -1 to -2%, their uniform rows flat (one piece a CTA: no
# boundary); DeepSeek h16 ragged (narrow) -0.5 to -1%, b128 h16 and h16 uniform flat.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/rq next_ring_q_l2_ahead.patch
patched /tmp/nq next_narrow_q_l2_ahead.patch
check_tree /tmp/rq rq ring
check_tree /tmp/nq nq narrow
for t in . /tmp/rq; do
  echo "== ring probe $t" >> "$L"
  (cd $t && PYTHONPATH=.:tests timeout 60 python3 tools/ring_probe.py ds_h64_sq1_ragged >> "$L" 2>&1)
done
say "ring probes"
C="ds_h64_sq1_ragged ds_h32_sq1_ragged ds_h16_sq2_ragged ds_h64_sq1_uniform" bench_trees . /tmp/rq
C="ds_h16_sq1_ragged ds_h16_sq1_uniform b128_h16_s8192 b8_h16_s8192" BENCH_TIMEOUT=120 bench_trees . /tmp/nq
cat "$L"
