"""Array interop: CuPy arrays, torch tensors and other CUDA arrays, zero-copy.

bf16 is ml_dtypes' bfloat16 on the host and in CuPy; fp8 travels as uint8
bytes (CuPy has no fp8 dtype): torch ``float8_e4m3fn`` tensors are viewed as
bytes.  CuPy is imported lazily so the leaf modules that only need
``dtype_name`` work without it.
"""
from __future__ import annotations

import numpy as np

_TORCH_FP8 = ("float8_e4m3fn",)


def is_torch(x) -> bool:
    return type(x).__module__.startswith("torch")


def is_cupy_type(t: type) -> bool:
    """Whether ``t`` is CuPy's ndarray, told without importing CuPy (its
    attributes are then read directly, not through ``__cuda_array_interface__``
    or ``flags``, which build objects on every read)."""
    return t.__name__ == "ndarray" and t.__module__.startswith("cupy")


def is_cupy(x) -> bool:
    return is_cupy_type(type(x))


_DTYPE_NAMES: dict = {}


def dtype_name(x) -> str:
    """Canonical dtype name of a NumPy/CuPy array or torch tensor ('bfloat16', 'uint8', ...).
    Memoised per dtype object: str(numpy dtype) costs ~2 us, and every call checks ~10 arrays."""
    dt = x.dtype
    name = _DTYPE_NAMES.get(dt)
    if name is None:
        name = _DTYPE_NAMES[dt] = str(dt).removeprefix("torch.")
    return name


def is_device_array(x) -> bool:
    if is_torch(x):
        return x.is_cuda
    if is_cupy(x):
        return True
    return hasattr(x, "__cuda_array_interface__")


def to_cupy(x, name: str):
    """A zero-copy CuPy view of a device array; raises TypeError naming the
    argument for anything that is not on a CUDA device."""
    import cupy

    if isinstance(x, cupy.ndarray):
        return x
    if is_torch(x):
        if not x.is_cuda:
            raise TypeError(f"{name}: expected a CUDA tensor, got a tensor on {x.device}")
        if dtype_name(x) in _TORCH_FP8:
            import torch
            x = x.view(torch.uint8)
        if dtype_name(x) == "bfloat16":
            return _torch_bf16_to_cupy(x)
        return cupy.from_dlpack(x)
    if hasattr(x, "__cuda_array_interface__"):
        return cupy.asarray(x)
    if hasattr(x, "__dlpack__"):
        try:
            return cupy.from_dlpack(x)
        except Exception as e:  # host DLPack producers land here
            raise TypeError(f"{name}: expected a CUDA device array, got {type(x).__name__} ({e})") from None
    raise TypeError(f"{name}: expected a CuPy array or CUDA tensor, got {type(x).__name__}")


def _torch_bf16_to_cupy(x):
    import cupy
    import ml_dtypes
    import torch

    try:
        return cupy.from_dlpack(x)
    except Exception:
        # Older CuPy lacks DLPack bf16: move the bits as int16, relabel in CuPy.
        return cupy.from_dlpack(x.view(torch.int16)).view(ml_dtypes.bfloat16)


def to_host_int(x) -> np.ndarray:
    """Device or host integer array -> NumPy (one device-to-host copy)."""
    if is_torch(x):
        return x.detach().cpu().numpy()
    if hasattr(x, "get"):
        return x.get()
    return np.asarray(x)
