"""NVRTC compilation through CuPy.

``get_kernel`` compiles through CuPy's RawKernel, so CuPy's disk cache (keyed on
the full source, options, arch and NVRTC version) is the only cache; this
module adds just an in-process memo per (variant, device).  ``compile_offline``
drives ``cupy.cuda.nvrtc`` directly so that the CLI and CI can compile and read
ptxas's resource report on a machine without a GPU.
"""
from __future__ import annotations

import dataclasses
import os
import re
import tempfile
import threading

from .render import launch_config, render
from .variants import CombineKey, DecodeKey, parse

BASE_OPTIONS = ("-std=c++17",)


class KernelCompileError(RuntimeError):
    """A variant failed to compile; carries its name, the log and the dump path."""

    def __init__(self, name: str, log: str, source_path: str):
        self.name, self.log, self.source_path = name, log, source_path
        super().__init__(f"{name} failed to compile (rendered source: {source_path})\n{log}")


@dataclasses.dataclass(frozen=True)
class Resources:
    """ptxas's report for one kernel (``-Xptxas=-v``)."""

    name: str
    arch: str
    registers: int
    static_smem: int
    dynamic_smem: int
    stack_frame: int
    spill_stores: int
    spill_loads: int
    log: str

    def line(self) -> str:
        return (f"{self.name:48s} {self.arch:7s} regs={self.registers:3d} "
                f"smem={self.static_smem + self.dynamic_smem:6d}B stack={self.stack_frame}B "
                f"spill_st={self.spill_stores}B spill_ld={self.spill_loads}B")


def dump_dir() -> str:
    """Where rendered sources go on a compile error (MLA_CUPY_DUMP_DIR overrides)."""
    return os.environ.get("MLA_CUPY_DUMP_DIR") or os.path.join(tempfile.gettempdir(), "mla_cupy")


def _dump_source(name: str, source: str) -> str:
    os.makedirs(dump_dir(), exist_ok=True)
    path = os.path.join(dump_dir(), f"{name}.cu")
    with open(path, "w", encoding="utf-8") as f:
        f.write(source)
    return path


def _numbered(source: str) -> str:
    return "\n".join(f"{i + 1:5d}  {line}" for i, line in enumerate(source.splitlines()))


def _as_key(key: DecodeKey | CombineKey | str) -> DecodeKey | CombineKey:
    return parse(key) if isinstance(key, str) else key


def _dynamic_smem(key) -> int:
    return launch_config(key).smem_bytes if isinstance(key, DecodeKey) else 0


def _nvrtc_include_dir() -> str | None:
    """CUDA headers matching the NVRTC in use (nvidia-cuda-runtime wheels); our
    sources include none, but user-added options may."""
    try:
        import nvidia.cuda_runtime as rt  # type: ignore
    except ImportError:
        return None
    inc = os.path.join(list(rt.__path__)[0], "include")
    return inc if os.path.isdir(inc) else None


def compile_offline(key: DecodeKey | CombineKey | str, arch: str = "sm_90a") -> Resources:
    """Compile to a cubin with NVRTC, without a GPU; return ptxas's resources."""
    from cupy.cuda import nvrtc

    key = _as_key(key)
    source = render(key)
    options = [*BASE_OPTIONS, f"-arch={arch}", "-Xptxas=-v", "-ftz=true"]
    inc = _nvrtc_include_dir()
    if inc:
        options.append(f"-I{inc}")
    prog = nvrtc.createProgram(source, f"{key.name}.cu", [], [])
    try:
        try:
            nvrtc.compileProgram(prog, options)
        except nvrtc.NVRTCError:
            log = nvrtc.getProgramLog(prog)
            raise KernelCompileError(key.name, log, _dump_source(key.name, _numbered(source))) from None
        log = nvrtc.getProgramLog(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return parse_ptxas_log(key, arch, log)


_RE_REGS = re.compile(r"Used (\d+) registers")
_RE_SMEM = re.compile(r"(\d+) bytes smem")
_RE_FRAME = re.compile(r"(\d+) bytes stack frame, (\d+) bytes spill stores, (\d+) bytes spill loads")


def parse_ptxas_log(key, arch: str, log: str) -> Resources:
    regs = _RE_REGS.search(log)
    frame = _RE_FRAME.search(log)
    if not regs or not frame:
        raise RuntimeError(f"{key.name}: no ptxas resource report in the NVRTC log:\n{log}")
    smem = _RE_SMEM.search(log)
    return Resources(key.name, arch, int(regs.group(1)), int(smem.group(1)) if smem else 0,
                     _dynamic_smem(key), int(frame.group(1)), int(frame.group(2)),
                     int(frame.group(3)), log)


_memo: dict = {}
_memo_lock = threading.Lock()


def device_arch(device_id: int) -> str:
    """Exact architecture of a device; 9.0 gets sm_90a so Hopper-only
    instructions (wgmma, setmaxnreg) are available to the kernels."""
    import cupy

    cc = cupy.cuda.Device(device_id).compute_capability
    return f"sm_{cc}a" if cc == "90" else f"sm_{cc}"


def get_kernel(key: DecodeKey | CombineKey | str, device_id: int | None = None):
    """The compiled ``cupy.RawKernel`` of a variant on a device (memoised)."""
    import cupy

    key = _as_key(key)
    if device_id is None:
        device_id = cupy.cuda.runtime.getDevice()
    memo_key = (key.name, device_id)
    kernel = _memo.get(memo_key)
    if kernel is not None:
        return kernel
    with _memo_lock:
        kernel = _memo.get(memo_key)
        if kernel is None:
            source = render(key)
            # CuPy appends its own -arch=sm_XY; NVRTC keeps the architecture-
            # specific 'a' target when both are given.
            options = (*BASE_OPTIONS, f"-arch={device_arch(device_id)}")
            with cupy.cuda.Device(device_id):
                kernel = cupy.RawKernel(source, key.name, options=options, backend="nvrtc")
                try:
                    kernel.compile()
                except cupy.cuda.compiler.CompileException as e:
                    path = _dump_source(key.name, _numbered(source))
                    raise KernelCompileError(key.name, str(e), path) from None
                smem = _dynamic_smem(key)
                if smem > 48 * 1024:
                    kernel.max_dynamic_shared_size_bytes = smem
            _memo[memo_key] = kernel
    return kernel
