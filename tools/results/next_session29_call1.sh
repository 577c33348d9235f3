#!/usr/bin/env bash
# Prepared in session 28 for session 29's first call (not run).  Device, repository root:
#   OUT=$OUT bash tools/results/next_session29_call1.sh
# 1. HEAD's fp8 test file: session 28's last commits (the q_scale routing guard, 274d588: an
#    `fp8` call with q_scale_ptr and bf16 queries runs the ring; test_fp8_bf16_queries_with_q_scale
#    now also at 16 and 32 heads) did not run on the GPU.
# 2. qs = next_narrow_q_scale.patch: the narrow kernel applies sigma_Q (q_scale) to each row's
#    scores, as the ring does, and the guard goes (fp8 calls with q_scale_ptr at <= 32 rows back
#    on the narrow kernel).  Checked (hopper_check narrow, fp8 / sparse / dense files, memcheck),
#    then timed beside HEAD: predicted fp8 h16 unchanged (+-1%: one FMUL by a register instead
#    of a constant), ds_mla h16 identical SASS.  Land it if the checks pass and fp8 h16 is within 1%.
# 3. pl = next_narrow_pipelined.patch: the `fp8` rows' 16-row narrow kernels issue S^T(j + 1)
#    before the softmax of tile j (a second S^T register set, 147-156 registers, no spill; no
#    C75xx serialisation warning from ptxas), so the tensor cores run it under the softmax;
#    O^T(j - 1) still retires before S^T(j + 1) is issued (both in flight made ptxas
#    serialise every wgmma).  Other kernels' SASS identical.  Predicted: fp8 h16 257 ->
#    243-252; sparse fp8 h16 (forced narrow) 97 -> 93-96; ds_mla unchanged.
# (~500 s; the sparse h16 split sweeps are next_session29_call2.sh)
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=60 gpu_files HEAD fp8
GPU_FILE_TIMEOUT=150 checked_patch /tmp/qs next_narrow_q_scale.patch qs narrow fp8 sparse dense
GPU_FILE_TIMEOUT=60 checked_patch /tmp/pl next_narrow_pipelined.patch pl narrow fp8 sparse
C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192" BENCH_TIMEOUT=60 bench_trees . /tmp/qs /tmp/pl
# sparse `fp8` rows at h16 on the narrow kernel (a custom shape: bench's flags as C)
C="--batch-size 128 --num-heads 16 --q-len 1 --cache-len 32768 --layout fp8 --mask null --sparse-topk 2048 --sink" \
  MLA_CUPY_HOPPER_SCHEDULE=narrow BENCH_TIMEOUT=60 bench_trees . /tmp/pl
echo "== pl sides apart" >> "$L"
(cd /tmp/pl && PYTHONPATH=.:tests timeout 60 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 --keep-mma --ablate idle,nomath >> "$L" 2>&1)
cat "$L"
