"""Session 16 diagnostic: replay test_checked_mode_random_corruptions_match_the_numpy_rules
(seed 4710371379438756716, the failure of call 5) trial by trial; for every trial the NumPy
rules pass, run the decode (validate="full", P=3, as the test does) and print which
tokens come back with NaN, with the case and its corruption."""
import numpy as np, sys, os
sys.path.insert(0, "tests")
import test_gpu_hardening as T
from mla_cupy import checked
from mla_cupy.testing import checked_mode_inputs, nan_filled
rng = np.random.default_rng(int(os.environ.get("SEED", "4710371379438756716")))
for trial in range(12):
    case = T._sparse(rng, fold=bool(trial % 2)) if trial % 3 else T._dense(rng, mask="sliding_window_causal", window=30)
    names = ["lookup_table", "cache_lengths"] if case.sparse is None else [
        "d_indices", "logical_indices", "topk_lengths", "extra_d_indices", "extra_topk_lengths"]
    arrays = [case.lookup_table, case.cache_lengths] if case.sparse is None else [case.sparse[k] for k in names]
    changes = []
    for _ in range(int(rng.integers(1, 4))):
        ai = int(rng.integers(0, len(arrays)))
        flat = arrays[ai].reshape(-1)
        # (the test's `flat[int(rng.integers(..))] = rng.choice(..)` draws the value first)
        v = rng.choice([-2, -1, 0, 5, 400, 2**31 - 1]); i = int(rng.integers(0, flat.size))
        flat[i] = v; changes.append((names[ai], i, int(v)))
    q_max = max(0, int(np.diff(case.input_row_offsets.astype(np.int64)).max()))
    exp = checked.find_violation(**checked_mode_inputs(case, q_max_seq_len=q_max))
    line = f"trial {trial} {'sparse' if case.sparse is not None else 'dense'} {changes} -> {'None' if exp is None else exp.rule}"
    if exp is None and "--gpu" in sys.argv:
        import cupy
        from mla_cupy import mla_decode
        rows = (case.q.shape[0], case.num_heads)
        out, lse = nan_filled((*rows, 512), case.out_dtype), nan_filled(rows, np.float32)
        mla_decode(cupy.asarray(case.q), case.collection(cupy), cupy.asarray(case.input_row_offsets),
                   layer_idx=case.layer_idx, scale=case.scale, mask=case.mask,
                   window=case.window if case.mask == "sliding_window_causal" else None, out=out, lse=lse,
                   q_max_seq_len=q_max, num_partitions=3, validate="full",
                   **case.sparse_kwargs(cupy), **case.fp8_kwargs(cupy))
        o = out.get().astype(np.float32)
        line += f" | NaN rows per token {[int(np.isnan(o[t]).any(axis=-1).sum()) for t in range(o.shape[0])]}"
        line += f" offsets {case.input_row_offsets.tolist()} cache {case.cache_lengths.tolist()}"
    print(line, flush=True)
