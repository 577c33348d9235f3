# Session 45, call 2: fp8's raw records in pairs (next_fp8_raw_pairs.patch) checked, then timed
# beside HEAD; the pairs tree's ceiling; the random-gather ceiling of the sparse cases
# (tools/gather_ceiling.py); sparse RS tiles gathered by cp.async (next_sparse_gather_cp_async.patch,
# on the pairs) checked and timed beside both.  ~400 s warm (the steps in the order of their worth: the budget may end it).
# Run as: OUT=$OUT bash tools/results/session45_call2.sh
#   0. the pairs tree: rs_checks (hopper_check narrow; the fp8 and sparse GPU files; the dense
#      file's fp8 tests; memcheck of the 16-row sparse garbage-index cases), memcheck of
#      hopper_check's dense fp8 case 33 (h4 page 3: pairs split across pages).
#   1. two rounds, HEAD / pairs: dense fp8 b128 h16 (predicted 192 -> 178-185 us: 32 bulk
#      copies a tile instead of 64, the copying warps' issue halved), fp8_ds_mla (control:
#      same SASS, flat), sparse fp8_ds_mla h16 (control, flat).
#   2. (last) the pairs tree's ceiling, dense fp8 (nomath predicted 166.7 -> 155-162).
#   4. the gather tree (pairs + cp.async gathers): rs_checks, then sparse h16 in the three trees
#      (predicted: flat if the gathers' DRAM rate bounds it; 72 -> 55-65 if the bulk copies' issue
#      through the TMA unit does, which step 3's bulk modes against the plain reads tell).
#   3. gather_ceiling: sparse h16's rows read by a plain kernel (its DRAM floor for the gathers), and
#      by bulk copies as the copying warps issue them (gather, and over rows in address order).
. tools/results/device_steps.sh
begin_call
patched_stack /tmp/pairs pairs next_fp8_raw_pairs.patch
(cd /tmp/pairs && rs_checks pairs 47); rc=$?
(cd /tmp/pairs && MLA_CUPY_SEED=503 PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/hopper_check.py --schedule narrow --case 33 > /tmp/mc_33.log 2>&1)
say "memcheck case 33 exit $?: $(grep -h 'ERROR SUMMARY\|PASS\|FAIL' /tmp/mc_33.log | cut -c1-150 | tr '\n' ' ')"
if [ $rc -eq 0 ]; then
  C="fp8_b128_h16_s8192 fp8_ds_mla_b128_h16_s8192 sparse_ds_mla_b128_sq1_h16"
  ROUNDS=2 bench_trees . /tmp/pairs
fi
PYTHONPATH=. timeout 120 python3 tools/gather_ceiling.py sparse_ds_mla_b128_sq1_h16 > "$OUT/gather.txt" 2>&1
say "gather exit $?"
cut -c1-200 "$OUT/gather.txt" >> "$L"
patched_stack /tmp/gather gather next_fp8_raw_pairs.patch next_sparse_gather_cp_async.patch
check_tree /tmp/gather gather narrow; rc=$?
(cd /tmp/gather && GPU_FILE_TIMEOUT=90 gpu_files gather sparse fp8)
(cd /tmp/gather && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 100 compute-sanitizer --tool memcheck --error-exitcode 1 \
   python3 tools/results/rs_memcheck_cases.py 16 48 > /tmp/mc.log 2>&1)
say "gather memcheck 16 48 exit $?: $(grep -h 'ERROR SUMMARY\|FAIL\|done' /tmp/mc.log | cut -c1-120 | tr '\n' ' ')"
if [ $rc -eq 0 ]; then
  C="sparse_ds_mla_b128_sq1_h16"
  ROUNDS=2 bench_trees . /tmp/pairs /tmp/gather
fi
(cd /tmp/pairs && PYTHONPATH=.:tests timeout 60 python3 tools/producer_ceiling.py fp8_b128_h16_s8192 \
   --keep-mma --ablate nomath > "$OUT/ceiling.txt" 2>&1)
say "ceiling exit $?"
grep -v "^#" "$OUT/ceiling.txt" | cut -c1-160 >> "$L"
say done
