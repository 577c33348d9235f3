# Session 46, call 3: the 32-row RS kernels with the features split (next_narrow_features.patch, with
# the narrow kernel's dequantising producer deleted (no variant used it any more):
# render.narrow_features; both math warpgroups on every tile, each converting half of each
# key's columns, partial S^T summed through shared memory) checked, then timed beside HEAD
# (32 rows today: the producer warpgroup's dequantising form).  ~450 s warm.
# Run as: OUT=$OUT bash tools/results/session46_call3.sh
#   0. the features tree: rs_checks (hopper_check narrow, whose fp8 cases draw 16 or 32 heads;
#      the fp8 and sparse GPU files; the dense file's fp8 tests; memcheck of the 16-row cases),
#      a second hopper_check narrow (another seed), memcheck of the 32-row garbage-index cases.
#   1. dense fp8 / fp8_ds_mla b128 h32 s8192 causal (auto: the narrow m32 kernel), HEAD / features:
#      predicted 306 / 346 -> 175-210 / 180-215 us (the h16 rows read the same bytes: 169 / 177).
#   2. sparse fp8_ds_mla h32 and folded s_q 2 h16 forced narrow (HEAD: the producer form), and HEAD
#      auto (the ring, 105.9 / 115 us): predicted 75-90 us with features.
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/feat feat next_narrow_features.patch
(cd /tmp/feat && rs_checks feat 61); rc=$?
check_tree /tmp/feat feat2 narrow || rc=1
(cd /tmp/feat && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 120 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/results/rs_memcheck_cases.py 32 62 > /tmp/mc32.log 2>&1)
say "feat memcheck 32 62 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc32.log | cut -c1-120 | tr '\n' ' ')"
cp /tmp/mc32.log "$OUT/mc32.log"
if [ $rc -eq 0 ]; then
  for r in 1 2; do
    LAYOUTS="fp8 fp8_ds_mla" bench_shape_trees "--batch-size 128 --num-heads 32 --q-len 1 --cache-len 8192 --mask causal" . /tmp/feat
    say "dense round $r"
  done
  C="sparse_ds_mla_b128_sq1_h32 sparse_ds_mla_b128_sq2_h16_fold"
  echo "== HEAD auto" >> "$L"; PYTHONPATH=. bench
  MLA_CUPY_HOPPER_SCHEDULE=narrow ROUNDS=2 bench_trees . /tmp/feat
fi
say done
