"""mla_cupy: MLA decode attention over a paged latent KV cache, CUDA kernels
rendered from Jinja2 templates and compiled by CuPy through NVRTC.

``mla_cupy.torch_ops`` (imported on first use; needs torch) registers the
``mla_cupy::mla_decode`` torch custom op; ``import mla_cupy`` never imports torch."""
from .cache import PagedKVCollection
from .decode_schedule import DecodeSchedule
from .dispatch import generic_flare_mla_decode_kv_cache_ragged, mla_decode, plan_decode
from .plan import DecodePlan
from .scalar_args import ScalarArgs, pack_scalar_args
from .schedule import choose_num_partitions

__all__ = ["DecodePlan", "DecodeSchedule", "PagedKVCollection", "ScalarArgs", "choose_num_partitions",
           "generic_flare_mla_decode_kv_cache_ragged", "mla_decode", "pack_scalar_args",
           "plan_decode"]
__version__ = "0.1.0"


def __getattr__(name):
    if name == "torch_ops":   # lazily: it imports torch
        import importlib
        return importlib.import_module(".torch_ops", __name__)
    raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
