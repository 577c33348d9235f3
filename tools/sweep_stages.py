"""Sweep the pipeline depth (NUM_STAGES) of 16-row tiles on the GPU.

Usage:  PYTHONPATH=.:tools python3 tools/sweep_stages.py

Developer experiment for the memory-bound small-H decode (DeepSeek at TP8 has
16 heads): more stages put more bytes in flight per SM but may cost the second
resident CTA.  This process only replaces render.launch_config with one that
uses the given stage count for 16-row tiles (the kernel source takes
NUM_STAGES from it), checks each setting against the NumPy reference on
hostile cases (NaN-poisoned unused slots, permuted tables, garbage sparse
indices), then times the bench configs (CUDA events, L2 flushed, median).
"""
import dataclasses

import cupy
import ml_dtypes
import numpy as np

import bench
from mla_cupy import compiler, dispatch, generic_flare_mla_decode_kv_cache_ragged, pack_scalar_args, render
from mla_cupy.testing import compare, make_case, make_sparse_case, reference, run_gpu, tolerance_for
from mla_cupy.variants import Layout

ORIGINAL = render.launch_config


def with_stages(stages):
    def launch_config(key):
        cfg = ORIGINAL(key)
        if key.tile_rows != 16:
            return cfg
        raw = key.layout not in (Layout.BF16, Layout.FP16)
        per_stage = ((cfg.block_n * key.row_bytes) if raw else 2 * cfg.block_n * (key.d_qk + 8)) \
            + 4 * cfg.block_n * (2 if key.layout is Layout.FP8_ROPE_AWARE else 1)
        return dataclasses.replace(cfg, num_stages=stages,
                                   smem_bytes=cfg.smem_bytes + (stages - cfg.num_stages) * per_stage)
    return launch_config


def use(stages):
    fn = with_stages(stages)
    render.launch_config = compiler.launch_config = dispatch.launch_config = fn
    compiler._memo.clear()


def check(layout, rng):
    cases = [make_case(rng, seq_lens=[1, 1, 1], cache_lens=[700, 0, 1500], num_heads=16, page_size=16,
                       layout=layout, sink="random")]
    if layout != "bf16":
        cases.append(make_sparse_case(rng, seq_lens=[1, 1], cache_lens=[300, 40], indices_stride=300,
                                      num_heads=16, layout=layout, extra_stride=9, valid_fraction=0.7))
    for case in cases:
        for p in (1, 3):
            out, lse = run_gpu(case, num_partitions=p)
            cmp = compare(out, lse, *reference(case), tol=tolerance_for(case))
            if not cmp.ok:
                return f"WRONG: {case.describe()}: {cmp.message}"
    return "ok"


def main():
    rng = np.random.default_rng(7)
    flush_buf = cupy.empty(256 << 20, dtype=np.uint8)
    flush = lambda: flush_buf.fill(0)  # noqa: E731
    plan = [("b128_h16_s1_k8192_p64", "bf16", None, (2, 4, 5)),
            ("ds_mla_b128_h16_s1_k8192_p64", "fp8_ds_mla", None, (2, 4, 6)),
            ("sparse_ds_mla_b128_h16_s1_k32768_top2048_p64", "fp8_ds_mla", 2048, (2, 6))]
    print(f"{'config':46s} {'stages':>6s} {'P':>3s} {'us':>9s}  check", flush=True)
    for name, layout, topk, stage_list in plan:
        if topk:
            batch, heads, q_len, cache_len, page, _ = bench.SPARSE_CONFIGS[name]
        else:
            batch, heads, q_len, cache_len, page = bench.CONFIGS[name]
        kv, q, offs = bench.build(batch, heads, q_len, cache_len, page, rng, layout)
        out = cupy.empty((batch, heads, 512), dtype=ml_dtypes.bfloat16)
        kw = {}
        if topk:
            kw = dict(sparse_mla=True, d_indices=bench.sparse_indices(kv, q_len, topk, rng))
        for stages in stage_list:
            use(stages)
            verdict = check(layout, rng)
            for p in (1, 2):
                sa = pack_scalar_args(batch, q_len, cache_len, heads, num_partitions=p)
                call = lambda: generic_flare_mla_decode_kv_cache_ragged(  # noqa: E731
                    q, offs, kv, 0, 576 ** -0.5, out, sa, **kw)
                call()
                us, _ = bench._events_median(call, 20, flush)
                print(f"{name:46s} {stages:6d} {p:3d} {us:9.1f}  {verdict}", flush=True)
        kv = q = offs = out = None
        cupy.get_default_memory_pool().free_all_blocks()


if __name__ == "__main__":
    main()
