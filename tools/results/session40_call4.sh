#!/usr/bin/env bash
# Session 40, call 4:  OUT=$OUT bash tools/results/session40_call4.sh
# Session 39's review, redone: next_dedupe_walk_and_q.patch writes the persistent kernels'
# walk step once (next_segment<START> in common/sequence.cuh.j2, used by the ring, the
# narrow kernel and the seesaw's twin) and the seesaw's Q copy once (load_q: split set-up,
# segment set-up, the next Q under the epilogue).  Behaviour unchanged; ptxas' output
# moves (opcode lines differing: ring ~3200 of 9400, narrow m32 ~7900 of 7700 (reordered),
# seesaw ~440 of 11400; no spills, registers as before).  So: the dense file on the patch,
# then the rows each kernel runs, HEAD beside the patch.
# Prediction: dense file passes; every row within run-to-run spread (±1%).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
patched /tmp/d next_dedupe_walk_and_q.patch
(cd /tmp/d && PYTHONPATH=. timeout 120 python3 tools/warm_kernel_cache.py > /tmp/warmd.txt 2>&1)
say "warm d: $(head -1 /tmp/warmd.txt)"
(cd /tmp/d && GPU_FILE_TIMEOUT=260 gpu_files d dense)
C="b128_h16_s8192 ds_h16_sq1_ragged ds_h32_sq1_ragged ds_h64_sq1_ragged ds_h64_sq1_uniform ds_h128_sq1_ragged ds_h128_sq1_uniform b32_h128_s4096 b1_h128_s65536" \
  BENCH_TIMEOUT=120 bench_trees . /tmp/d
cat "$L"
