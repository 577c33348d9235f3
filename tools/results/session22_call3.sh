#!/usr/bin/env bash
# Session 22, call 3.  Device, repository root:  OUT=$OUT bash tools/results/session22_call3.sh
# Call 2: the pair's skeleton 184.6 us, without the st.async stores into the peer 83.5; the whole
# kernel 228.5, without them 203.0.  Hypothesis: each st.async instruction half-fills 32 sectors
# (a thread's two 16-byte pieces of one sector go out in two instructions), doubling the DSMEM
# packets.  `sectors` makes each instruction write whole sectors (wrong places, same bytes).
# Prediction: if sectors are the cost, the skeleton 184.6 -> ~135 us and the whole kernel
#   228.5 -> ~210; if not, within 3 us.
set -u
export PYTHONUNBUFFERED=1 PYTHONPATH=.:tests
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh
export MLA_CUPY_HOPPER_SCHEDULE=pair
timeout 200 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 \
  --ablate noload+noconvert,noload+noconvert+sectors,sectors >> "$L" 2>&1; say "strip $?"
timeout 150 python3 tools/producer_ceiling.py sparse_ds_mla_b128_sq1_h128 --keep-mma \
  --ablate sectors,nopeer >> "$L" 2>&1; say "keep-mma $?"
cat "$L"
