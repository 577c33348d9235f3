# Prepared in session 41 (never run): the RS math for sparse fp8 at 16 rows
# (next_narrow_rs_sparse.patch, stacked on next_narrow_rs_math.patch): hopper_check narrow
# (its sparse cases at 16 heads or fewer run RS), the sparse GPU file, memcheck of forced-
# narrow sparse cases with garbage indices (16 rows: h16 unfolded, h8 folded at s_q 2),
# then the sparse h16 rows beside HEAD (~550 s).  Run after call 1 passed, as:
# OUT=$OUT bash tools/results/next_session42_call4.sh
. tools/results/device_steps.sh
begin_call
patched /tmp/rs next_narrow_rs_math.patch
(cd /tmp/rs && git apply tools/results/next_narrow_rs_sparse.patch) || say "apply sparse failed"
(cd /tmp/rs && PYTHONPATH=. timeout 150 python3 tools/warm_kernel_cache.py > /tmp/warm_rs.txt 2>&1)
say "warm rs: $(head -1 /tmp/warm_rs.txt)"
check_tree /tmp/rs rs narrow
(cd /tmp/rs && GPU_FILE_TIMEOUT=150 gpu_files rs sparse)
(cd /tmp/rs && MLA_CUPY_HOPPER_SCHEDULE=narrow PYTHONPATH=. timeout 150 compute-sanitizer --tool memcheck \
   --error-exitcode 1 python3 - > /tmp/mc_sparse_rs.log 2>&1 <<'PY'
import numpy as np
import cupy
from mla_cupy.testing import check_case, make_sparse_case
cupy.cuda.set_allocator(None)   # every array its own allocation: an overrun leaves it
rng = np.random.default_rng(41)
for layout in ("fp8_ds_mla", "fp8"):
    for fold, heads, seq_lens in ((False, 16, [1, 0, 1]), (True, 8, [2, 0, 1])):
        case = make_sparse_case(rng, seq_lens=seq_lens, cache_lens=[9, 5, 300], layout=layout,
                                indices_stride=70, num_heads=heads, fold=fold, topk="random",
                                extra_stride=9, extra_page_size=3, valid_fraction=0.5, sink="random")
        for p in (1, 3):
            cmp, *_ = check_case(case, num_partitions=p)
            print(layout, "fold" if fold else "", f"P={p}", "PASS" if cmp.ok else "FAIL", cmp.message, flush=True)
            assert cmp.ok, case.describe()
print("sparse rs memcheck cases done")
PY
)
say "memcheck sparse rs exit $?: $(grep -h 'ERROR SUMMARY\|PASS\|FAIL\|done' /tmp/mc_sparse_rs.log | cut -c1-120 | tr '\n' ' ')"
C="sparse_ds_mla_b128_sq1_h16 sparse_ds_mla_b128_sq1_h32"
bench_trees . /tmp/rs
LAYOUTS=fp8 bench_shape_trees "--batch-size 128 --num-heads 16 --cache-len 32768 --sparse-topk 2048" . /tmp/rs
say done
