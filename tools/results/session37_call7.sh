#!/usr/bin/env bash
# Session 37, call 7 (device, repository root, .whl carried):  OUT=$OUT bash tools/results/session37_call7.sh
# The landed tree (3a7e28d): 64-row boxes for the seesaw only (call 6's /tmp/bx had them for the
# narrow kernel too, whose h16 rows lost 1-3%).  hopper_check seesaw and narrow on it, then
# every README row beside the peers.  Predictions: 0 failures; h128 rows as call 6's bx, h16
# rows as call 6's HEAD.
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
. tools/results/device_steps.sh
begin_call
check_tree . landed seesaw
check_tree . landed_narrow narrow
COMMIT=3a7e28d PEER_TIMEOUT=170 peer_all_rows
cat "$L"
