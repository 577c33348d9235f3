#!/usr/bin/env bash
# Session 17, call 1 (device, repository root; .whl carried):
#   OUT=$OUT COMMIT=<hash> bash tools/results/session17_call1.sh
# (a) where the seesaw's warps wait, ours and FlashMLA's, by SASS instruction
#     (ncu_hotspots, new --peer) on b128 h128 s8192: session 16's raw metrics gave the
#     same instruction count, IPC 0.83 vs 1.11, gmma stalls 0.76 vs 0.12 an instruction
#     (gmma: warps of a warpgroup waiting for each other at WARPGROUP.ARRIVE);
# (b) the hardening test at the seed that failed in session 16 (the _finite_cache fix);
# (c) the full GPU suite and the quick sanitizer sweep (tools/gpu_run.sh; HOST=0).
set -u
export PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
. tools/results/device_steps.sh   # say, bench
python3 -m pip install -q --no-index --no-deps --no-compile --target /tmp/site .whl/*.whl && say "peers installed"
mkdir -p /tmp/hs
for who in ours flashmla; do
  peer=(); regex=hopper_seesaw
  [ $who = flashmla ] && { peer=(--peer flashmla); regex=splitkv_mla; }
  PYTHONPATH=.:/tmp/site timeout 150 python3 tools/ncu_hotspots.py b128_h128_s8192 $regex --top 60 \
    --out /tmp/hs/$who "${peer[@]}" > $OUT/hotspots_$who.txt 2>&1
  say "hotspots $who exit $?"; gzip -c /tmp/hs/$who/hotspots_source.csv > /tmp/hs/${who}_source.csv.gz
done
tar -C /tmp/hs -cf $OUT/hotspots_csv.tar ours_source.csv.gz flashmla_source.csv.gz
MLA_CUPY_SEED=4710371379438756716 PYTHONPATH=.:tests timeout 150 python3 -m pytest -m gpu -q -p no:cacheprovider \
  tests/test_gpu_hardening.py -k random_corruptions 2>&1 | tail -3 >> "$L"; say "seed test"
HOST=0 TEST_TIMEOUT=330 SANITIZE_TIMEOUT=330 COMMIT=$COMMIT OUT=$OUT bash tools/gpu_run.sh > $OUT/gpu_run.txt 2>&1
say "gpu_run exit $?"
cat "$L"; head -12 $OUT/tests.log
