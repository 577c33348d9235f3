import numpy as np, sys, os
sys.path.insert(0, "tests")
import test_gpu_hardening as T
from mla_cupy import checked
from mla_cupy.testing import checked_mode_inputs, reference, nan_filled
import cupy
from mla_cupy import mla_decode
rng = np.random.default_rng(4710371379438756716)
for trial in range(12):
    case = T._sparse(rng, fold=bool(trial % 2)) if trial % 3 else T._dense(rng, mask="sliding_window_causal", window=30)
    arrays = [case.lookup_table, case.cache_lengths] if case.sparse is None else [
        case.sparse[k] for k in ("d_indices", "logical_indices", "topk_lengths", "extra_d_indices", "extra_topk_lengths")]
    for _ in range(int(rng.integers(1, 4))):
        a = arrays[int(rng.integers(0, len(arrays)))]
        flat = a.reshape(-1)
        flat[int(rng.integers(0, flat.size))] = rng.choice([-2, -1, 0, 5, 400, 2**31 - 1])
    q_max = max(0, int(np.diff(case.input_row_offsets.astype(np.int64)).max()))
    if checked.find_violation(**checked_mode_inputs(case, q_max_seq_len=q_max)) is None:
        break
print("trial", trial, {k: (None if v is None else v.shape) for k, v in case.sparse.items()})
print("topk", case.sparse["topk_lengths"], "extra_topk", case.sparse["extra_topk_lengths"])
ref = reference(case); ref = ref[0] if isinstance(ref, tuple) else ref
for validate in ("full", None):
  for P in (3, 1, 2):
    rows = (case.q.shape[0], case.num_heads)
    out, lse = nan_filled((*rows, 512), case.out_dtype), nan_filled(rows, np.float32)
    kw = dict(layer_idx=case.layer_idx, scale=case.scale, mask=case.mask, out=out, lse=lse, q_max_seq_len=q_max,
              num_partitions=P, **case.sparse_kwargs(cupy), **case.fp8_kwargs(cupy))
    if validate: kw["validate"] = validate
    mla_decode(cupy.asarray(case.q), case.collection(cupy), cupy.asarray(case.input_row_offsets), **kw)
    o = out.get().astype(np.float32); l = lse.get()
    nanrows = [int(np.isnan(o[t]).any(axis=-1).sum()) for t in range(o.shape[0])]
    err = np.nanmax(np.abs(o - np.asarray(ref, np.float32)))
    print(f"validate={validate} P={P} backend={os.environ.get('MLA_CUPY_BACKEND','auto')}: NaN rows per token {nanrows}, lse token0 {l[0,:4]}, max err (non-NaN) {err:.3g}")
