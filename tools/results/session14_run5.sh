#!/usr/bin/env bash
# Session 14, call 5: the whole dense GPU suite at the final tree (the 32-row narrow kernel is
# the only kernel whose SASS changed since 566fc4e; fp8 and 16-row narrow SASS identical).
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
T0=$SECONDS
timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 > $OUT/log.txt
timeout 220 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py > $OUT/dense.txt 2>&1
echo "[t=$((SECONDS-T0))s] test_gpu_dense exit $? $(tail -1 $OUT/dense.txt)" >> $OUT/log.txt
cat $OUT/log.txt; grep -i "fail\|error" $OUT/dense.txt | head
