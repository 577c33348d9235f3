#!/usr/bin/env bash
# Session 14, call 3.
# (a) next_shares_first_loads.patch (the first NUM_THREADS lengths load beside batch_size):
#     prediction -1 us on every segment-mode row, nothing else moves.
# (b) where the time goes: decode and combine durations (ncu gpu__time_duration, real clocks:
#     --clock-control none; serialised, so no PDL overlap) on even and ragged DeepSeek rows,
#     16 and 32 rows, b8 h16 and b32 h128.
# (c) the splits' ragged regression reading (NOTES session 13): MLA_CUPY_SPLIT=partitions on
#     the ragged and uniform rows; with the 32-row tile's chain shortened (two warpgroups) the
#     h=32 splits row should move more than the uniform one did (333.8 before).
set -u
export PYTHONPATH=.:tests PYTHONUNBUFFERED=1 HYPOTHESIS_PROFILE=gpu
L=$OUT/log.txt; : > "$L"; T0=$SECONDS
say() { echo "[t=$((SECONDS-T0))s] $*" >> "$L"; }
C="ds_h16_sq1_ragged ds_h16_sq1_uniform ds_h32_sq1_ragged b128_h16_s8192 b8_h16_s8192"
bench() { timeout 100 python3 tools/bench.py "$@" --repeats 20 --check-seqs 3 2>&1 | grep -v "^#" | cut -c1-110 >> "$L"; }
rm -rf /tmp/sf && cp -r . /tmp/sf && (cd /tmp/sf && git apply tools/results/next_shares_first_loads.patch) || say "apply failed"
timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm HEAD"
echo "== splits forced (HEAD)" >> "$L"; MLA_CUPY_SPLIT=partitions bench ds_h16_sq1_ragged ds_h32_sq1_ragged ds_h16_sq1_uniform ds_h32_sq1_uniform; say "splits"
for c in ds_h16_sq1_ragged ds_h16_sq1_uniform ds_h32_sq1_ragged ds_h32_sq1_uniform b8_h16_s8192 b32_h128_s4096; do
  timeout 90 ncu --clock-control none --csv --metrics gpu__time_duration.sum --kernel-name regex:mla_ \
    python3 tools/bench.py $c --repeats 20 --check-seqs 1 > /tmp/ncu_$c.csv 2>/dev/null
  python3 - "$c" /tmp/ncu_$c.csv >> $OUT/ncu_times.txt <<'PY'
import csv, sys, statistics, collections
case, path = sys.argv[1], sys.argv[2]
rows = [r for r in csv.reader(l for l in open(path) if l.startswith('"'))]
head, body = rows[0], rows[1:]
ki, vi = head.index("Kernel Name"), head.index("Metric Value")
t = collections.defaultdict(list)
for r in body:
    t[r[ki].split("(")[0]].append(float(r[vi].replace(",", "")))
for k, v in t.items():
    print(f"{case:22s} {k[:70]:70s} n={len(v):3d} median {statistics.median(v)/1000:8.1f} us  min {min(v)/1000:8.1f}")
PY
done; say "ncu"; cat $OUT/ncu_times.txt >> "$L"
cd /tmp/sf
timeout 100 python3 tools/warm_kernel_cache.py 2>&1 | tail -1 >> "$L"; say "warm sf"
timeout 170 python3 -m pytest -m gpu -q -p no:cacheprovider tests/test_gpu_dense.py \
  -k "narrow or segment_mode or longest_first or independent" > $OUT/sf_tests.txt 2>&1
say "sf tests exit $? $(tail -1 $OUT/sf_tests.txt)"
if grep -q "passed" $OUT/sf_tests.txt && ! grep -q "failed\|error" $OUT/sf_tests.txt; then
  for r in 1 2; do
    echo "== sf ($r)" >> "$L"; bench $C; say "bench sf"
    echo "== HEAD ($r)" >> "$L"; (cd - > /dev/null && bench $C); say "bench HEAD"
  done
fi
cat "$L"
