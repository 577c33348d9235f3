"""The environment variables mla_cupy reads, in one place, and a cheap read.

An entry-point call reads three of them (backend, launch path, checked mode)
to key its memoised plan; ``os.environ.get`` encodes the name and decodes the
value on every read (~0.5 us each), a tenth of the host budget of a call.
:func:`get` looks the encoded name up in the mapping ``os.environ`` writes
through (CPython on POSIX), so a variable set or cleared at run time is seen
at the next call, as with ``os.environ.get``.
"""
from __future__ import annotations

import os

BACKEND = "MLA_CUPY_BACKEND"          # auto | portable | hopper (variants.resolve_backend)
LAUNCH = "MLA_CUPY_LAUNCH"            # driver | cupy (plan.launch_mode)
VALIDATE = "MLA_CUPY_VALIDATE"        # 1: the checked mode (checked.resolve_validate)
HOPPER_SCHEDULE = "MLA_CUPY_HOPPER_SCHEDULE"  # auto | ring | seesaw | narrow | pair (compiler.choose_hopper_schedule)
SPLIT = "MLA_CUPY_SPLIT"              # auto | partitions | segments: segment mode and balanced splits where they apply, never, or segment mode for the dense ring of one sequence too and for the seesaw's `_segments` twin (dispatch.segment_ctas, dispatch.balanced_splits)
HOPPER_LOADS = "MLA_CUPY_HOPPER_LOADS"  # cp_async (or unset): the ring's loads; "tma" is refused since its removal (render.hopper_loads)
DUMP_DIR = "MLA_CUPY_DUMP_DIR"        # where compile failures leave their source (compiler)
SEED = "MLA_CUPY_SEED"                # replays a test's random case (testing)

_store = getattr(os.environ, "_data", None)
_FAST = os.name == "posix" and isinstance(_store, dict)
_keys: dict = {}


def get(name: str) -> str | None:
    """``os.environ.get(name)``, without the per-read encoding where CPython allows."""
    if not _FAST:
        return os.environ.get(name)
    key = _keys.get(name)
    if key is None:
        key = _keys[name] = os.fsencode(name)
    value = _store.get(key)
    return None if value is None else os.fsdecode(value)
