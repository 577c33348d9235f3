#!/usr/bin/env bash
# Session 16, call 7: call 6 showed the checked-mode failure (seed 4710371379438756716,
# trial 2, sparse, token 0 NaN) at b9b856f and with the portable kernels too: older than
# this session's combine.  Which calls write NaN: P 3/1/2, with and without validate="full",
# Hopper and portable.  Usage: OUT=$OUT bash tools/results/session16_call7.sh
set -u
export PYTHONUNBUFFERED=1
PYTHONPATH=.:tests timeout 150 python3 tools/results/session16_diag_checked_nan.py > $OUT/diag.txt 2>&1
MLA_CUPY_BACKEND=portable PYTHONPATH=.:tests timeout 100 python3 tools/results/session16_diag_checked_nan.py 2>&1 | grep validate >> $OUT/diag.txt
cat $OUT/diag.txt | tail -20
