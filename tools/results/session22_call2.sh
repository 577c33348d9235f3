#!/usr/bin/env bash
# Session 22, call 2.  Device, repository root:  OUT=$OUT bash tools/results/session22_call2.sh
# Is the pair bound by its distributed-shared-memory stores?  producer_ceiling's new
# `nopeer` (no st.async into the peer; full_remote completes on an expect-tx of 0 bytes).
# Prediction: if DSMEM traffic is the bound, the skeleton (strip+noload+noconvert, 183.6 us in
#   session 21) drops by > 40 us with nopeer, and the whole kernel (228) by > 20 us; if the
#   math warpgroups' chain is the bound, both move < 5 us.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=.:tests
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
export MLA_CUPY_HOPPER_SCHEDULE=pair
timeout 200 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 \
  --ablate noload+noconvert,noload+noconvert+nopeer,nopeer,noconvert+nopeer >> "$L" 2>&1; say "strip $?"
timeout 150 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 --keep-mma \
  --ablate nopeer,noconvert+nopeer,noload+noconvert+nopeer >> "$L" 2>&1; say "keep-mma $?"
cat "$L"
