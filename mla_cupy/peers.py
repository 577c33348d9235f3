"""Peer adapters for ``mla-cupy bench``: FlashMLA and FlashInfer through their
public Python APIs, on the bench's own arrays (zero-copy torch views, the same
block table), behind optional imports.

Each adapter says why it cannot run a case (``available``: not importable;
``unsupported``: a shape or feature it lacks) before anything touches the GPU;
``prepare`` returns ``(call, result, extra)`` like the bench's own entry:
``call()`` is what is timed, ``result()`` runs once and returns
``(out [T, H, 512], lse or None)`` for the reference check (peers' LSEs are
not compared: FlashMLA's is [B, H, s_q], FlashInfer's base 2).

Signatures are those of the wheels the GPU run installs (sgl-flash-mla 1.0.0,
flashinfer-python 0.6.18.post1):
``flash_mla.flash_mla_with_kvcache(q, k_cache, block_table, cache_seqlens,
head_dim_v, tile_scheduler_metadata, num_splits, softmax_scale, causal,
is_fp8_kvcache, indices, attn_sink, ..., use_legacy)`` (dense bf16/fp16 and
the sparse V3.2 656-byte kernel live on its legacy sm_90 side), and
``flashinfer.mla.BatchMLAPagedAttentionWrapper(workspace, backend="fa3")``
with ``plan(qo_indptr, kv_indptr, kv_indices, kv_len_arr, num_heads,
head_dim_ckv, head_dim_kpe, page_size, causal, sm_scale, q_data_type,
kv_data_type)`` and ``run(q_nope, q_pe, ckv_cache, kpe_cache, out=...)``.
"""
from __future__ import annotations

import importlib
import os

import numpy as np

D_LATENT, D_ROPE = 512, 64
FLASHINFER_WORKSPACE_BYTES = 128 << 20      # its documented recommendation


def torch_view(x):
    """A CuPy array as a torch tensor on the same memory (bf16 moved as int16 bits)."""
    import torch
    if str(x.dtype) == "bfloat16":
        return torch.from_dlpack(x.view(np.int16)).view(torch.bfloat16)
    return torch.from_dlpack(x)


class Peer:
    """An optional library run beside ours."""

    name = ""
    module = ""
    package = ""    # its distribution, whose version the report records

    def __init__(self):
        self._missing = None
        self._checked = False

    def available(self) -> str | None:
        """None when importable, else the reason (checked once)."""
        if not self._checked:
            self._checked = True
            try:
                self._prepare_env()
                importlib.import_module(self.module)
            except Exception as e:  # noqa: BLE001 - a broken install is as absent as a missing one
                msg = str(e).strip().splitlines()[0] if str(e).strip() else type(e).__name__
                self._missing = f"{self.module} not importable: {msg[:160]}"
        return self._missing

    def _prepare_env(self) -> None:
        """Environment a peer reads at import time."""

    def unsupported(self, case) -> str | None:
        raise NotImplementedError

    def prepare(self, case, inputs):
        raise NotImplementedError


class FlashMLA(Peer):
    name = "flashmla"
    module = "flash_mla"
    package = "sgl-flash-mla"

    def unsupported(self, case) -> str | None:
        if case.page_size != 64:
            return "page_size 64 only"
        if case.sparse:
            if case.layout != "fp8_ds_mla":
                return "sparse: fp8_ds_mla (V3.2 656-byte) caches only"
            if case.num_heads not in (64, 128):
                return "sparse: h_q 64 or 128 only"
            if case.mask != "null":
                return "sparse: causal=False only (use --mask null)"
            if case.fold:
                return "sparse: each token its own index row (no fold_shared_index)"
            return None
        if case.layout not in ("bf16", "fp16"):
            return "dense: bf16/fp16 caches only"
        if case.sink:
            return "dense: no attention sink"
        return None

    def prepare(self, case, inputs):
        import flash_mla
        import torch

        q = torch_view(inputs.q).view(case.batch_size, case.q_len, case.num_heads, -1)
        blocks = torch_view(inputs.kv.blocks)                  # [nb, 1, page, row]: one layer
        k_cache = blocks.view(blocks.shape[0], case.page_size, 1, blocks.shape[-1])
        meta, _ = flash_mla.get_mla_metadata()
        if case.sparse:
            indices = torch_view(inputs.d_indices).view(case.batch_size, case.q_len, -1)
            sink = None if inputs.sink is None else torch_view(inputs.sink)

            def call():
                return flash_mla.flash_mla_with_kvcache(
                    q, k_cache, None, None, D_LATENT, meta, None, softmax_scale=inputs.scale,
                    causal=False, is_fp8_kvcache=True, indices=indices, attn_sink=sink,
                    use_legacy=True)
        else:
            table = torch_view(inputs.kv.lookup_table)
            seqlens = torch.from_numpy(inputs.key_counts.astype(np.int32)).cuda()
            causal = case.mask == "causal"

            def call():
                return flash_mla.flash_mla_with_kvcache(
                    q, k_cache, table, seqlens, D_LATENT, meta, None, softmax_scale=inputs.scale,
                    causal=causal, use_legacy=True)

        def result():
            out, _ = call()
            return out.reshape(case.num_tokens, case.num_heads, D_LATENT), None
        return call, result, {}


class FlashInfer(Peer):
    name = "flashinfer"
    module = "flashinfer.mla"
    package = "flashinfer-python"

    def _prepare_env(self) -> None:
        # Read when flashinfer is imported: JIT builds for this GPU only, under /tmp.
        os.environ.setdefault("FLASHINFER_WORKSPACE_BASE", "/tmp/mla_cupy_flashinfer")
        if "FLASHINFER_CUDA_ARCH_LIST" not in os.environ:
            import cupy
            cc = cupy.cuda.Device().compute_capability
            os.environ["FLASHINFER_CUDA_ARCH_LIST"] = f"{cc[:-1]}.{cc[-1]}" + ("a" if cc == "90" else "")

    def unsupported(self, case) -> str | None:
        if case.sparse:
            return "no sparse top-k decode in BatchMLAPagedAttentionWrapper"
        if case.layout not in ("bf16", "fp16"):
            return "bf16/fp16 caches only (its fp8 path takes separate scale arrays: not the same bytes)"
        if case.sink:
            return "no attention sink"
        return None

    def prepare(self, case, inputs):
        import flashinfer.mla
        import torch

        q = torch_view(inputs.q)
        rows = torch_view(inputs.kv.blocks)[:, 0]              # [nb, page, 576]
        pages = -(-inputs.key_counts // case.page_size)
        table = inputs.kv.lookup_table.get()
        kv_indices = np.concatenate([table[b, :pages[b]] for b in range(case.batch_size)])
        as_int32 = lambda a: torch.from_numpy(np.ascontiguousarray(a, dtype=np.int32))  # noqa: E731
        workspace = torch.empty(FLASHINFER_WORKSPACE_BYTES, dtype=torch.int8, device="cuda")
        wrapper = flashinfer.mla.BatchMLAPagedAttentionWrapper(workspace, backend="fa3")
        wrapper.plan(as_int32(np.arange(0, case.num_tokens + 1, case.q_len)),
                     as_int32(np.concatenate([[0], np.cumsum(pages)])), as_int32(kv_indices),
                     as_int32(inputs.key_counts), case.num_heads, D_LATENT, D_ROPE, case.page_size,
                     case.mask == "causal", inputs.scale, q.dtype, rows.dtype)
        out = torch.empty(case.num_tokens, case.num_heads, D_LATENT, dtype=q.dtype, device="cuda")
        q_nope, q_pe = q[..., :D_LATENT], q[..., D_LATENT:]
        ckv, kpe = rows[..., :D_LATENT], rows[..., D_LATENT:]

        def call():
            return wrapper.run(q_nope, q_pe, ckv, kpe, out=out)

        def result():
            call()
            return out, None
        return call, result, {}   # wrapper keeps the workspace alive


PEERS = {p.name: p for p in (FlashMLA(), FlashInfer())}
