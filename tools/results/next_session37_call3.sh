#!/usr/bin/env bash
# Session 37, call 3 (prepared in session 36, not run; device, repository root):
#   OUT=$OUT bash tools/results/next_session37_call3.sh
# The seesaw's h128 tile (~1.79 us against FlashMLA's ~1.65): FlashMLA holds Q's last 64-column
# chunk in registers (that chunk's S wgmmas RS, not SS).  Per 64-key tile our seesaw moves
# ~285 KB through shared memory (S's Q and K operands 147 KB, P V's V 64 KB, the TMA writes
# 74 KB) against ~2200 clocks at 128 B/clock; Q's last chunk in registers takes 8 KB of it.
# next_seesaw_q_last_in_registers.patch (/tmp/ql): wgmma_qk_rs (m64nBLOCK_Nk16, A from
# registers), 16 registers a math thread loaded once after Q lands (LDS.32 in fragment
# order), used for chunk CHUNKS - 1 of every S.  CPU: the 12 seesaw variants compile, no
# spills, 20 RS HGMMAs of 244, no extra WARPGROUP.DEPBAR/ARRIVE; the ring, narrow and pair
# variants still compile (the helper is shared).
# Predictions: hopper_check seesaw 0 failures; the dense file passes; rows HEAD / ql: if S
# is shared-memory-bound, h128 uniform / ragged, b128 h128 and varlen -2 to -3%, b32 -1 to
# -2%; if not, flat (then the tile's bound is elsewhere: the pair probe of call 2).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
GPU_FILE_TIMEOUT=200 checked_patch /tmp/ql next_seesaw_q_last_in_registers.patch ql seesaw dense
C="ds_h128_sq1_uniform ds_h128_sq1_ragged b128_h128_s8192 b128_sq2_h128_varlen_causal b32_h128_s4096 b1_h128_s65536" \
  BENCH_TIMEOUT=150 bench_trees . /tmp/ql
cat "$L"
