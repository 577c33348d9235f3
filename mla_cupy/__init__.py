"""mla_cupy: MLA decode attention over a paged latent KV cache, CUDA kernels
rendered from Jinja2 templates and compiled by CuPy through NVRTC."""
from .cache import PagedKVCollection
from .dispatch import generic_flare_mla_decode_kv_cache_ragged, mla_decode
from .scalar_args import ScalarArgs, pack_scalar_args
from .schedule import choose_num_partitions

__all__ = ["PagedKVCollection", "ScalarArgs", "choose_num_partitions",
           "generic_flare_mla_decode_kv_cache_ragged", "mla_decode", "pack_scalar_args"]
__version__ = "0.1.0"
