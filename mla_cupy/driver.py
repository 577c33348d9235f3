"""The CUDA driver entry points CuPy does not wrap (cuLaunchKernelEx,
cuTensorMapEncodeTiled) and the cuda.h structures they take, through ctypes on
the libcuda.so.1 that CuPy has loaded: no dependency beyond the driver.  Each
binding is made on first use; without a driver, :func:`bind` raises
RuntimeError."""
from __future__ import annotations

import ctypes
import functools


class LaunchAttribute(ctypes.Structure):     # CUlaunchAttribute
    _fields_ = [("id", ctypes.c_int), ("pad", ctypes.c_char * 4), ("value", ctypes.c_char * 64)]


class LaunchConfig(ctypes.Structure):        # CUlaunchConfig
    _fields_ = [("gridDimX", ctypes.c_uint), ("gridDimY", ctypes.c_uint), ("gridDimZ", ctypes.c_uint),
                ("blockDimX", ctypes.c_uint), ("blockDimY", ctypes.c_uint), ("blockDimZ", ctypes.c_uint),
                ("sharedMemBytes", ctypes.c_uint), ("hStream", ctypes.c_void_p),
                ("attrs", ctypes.POINTER(LaunchAttribute)), ("numAttrs", ctypes.c_uint)]


PROGRAMMATIC_STREAM_SERIALIZATION = 6   # CU_LAUNCH_ATTRIBUTE_PROGRAMMATIC_STREAM_SERIALIZATION


@functools.lru_cache(maxsize=1)
def library() -> ctypes.CDLL:
    try:
        return ctypes.CDLL("libcuda.so.1")
    except OSError as e:
        raise RuntimeError(f"this needs the CUDA driver (libcuda.so.1): {e}") from None


def bind(name: str, argtypes) -> ctypes._CFuncPtr:
    """The driver function ``name`` returning a CUresult (an int)."""
    f = getattr(library(), name)
    f.argtypes = list(argtypes)
    f.restype = ctypes.c_int
    return f


def check(name: str, status: int, context: str = "") -> None:
    if status != 0:
        raise RuntimeError(f"{name} failed with CUresult {status}{context}")
