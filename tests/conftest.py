import os
import secrets

import numpy as np
import pytest
from hypothesis import HealthCheck, settings
from mla_cupy import environment

settings.register_profile("default", deadline=None, max_examples=25,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.register_profile("gpu", deadline=None, max_examples=60,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
# A soak of the property tests (a failure seen once in a run of the "gpu" profile).
settings.register_profile("gpu_long", deadline=None, max_examples=600,
                          suppress_health_check=[HealthCheck.too_slow, HealthCheck.data_too_large])
settings.load_profile(os.environ.get("HYPOTHESIS_PROFILE", "default"))


def _has_gpu() -> bool:
    try:
        import cupy
        return cupy.cuda.runtime.getDeviceCount() > 0
    except Exception:
        return False


HAS_GPU = _has_gpu()


def pytest_collection_modifyitems(config, items):
    if HAS_GPU:
        return
    skip = pytest.mark.skip(reason="needs a CUDA GPU (run on the device machine: tools/gpu_run.sh)")
    for item in items:
        if "gpu" in item.keywords:
            item.add_marker(skip)


SEED_ENV = environment.SEED


@pytest.fixture
def rng(request):
    """A generator with a fresh seed per test (``MLA_CUPY_SEED`` fixes it); a failing
    test's report names the seed (pytest_runtest_makereport below)."""
    seed = int(os.environ[SEED_ENV]) if os.environ.get(SEED_ENV) else secrets.randbits(63)
    request.node.mla_cupy_seed = seed
    return np.random.default_rng(seed)


@pytest.hookimpl(hookwrapper=True)
def pytest_runtest_makereport(item, call):
    report = (yield).get_result()
    seed = getattr(item, "mla_cupy_seed", None)
    if report.failed and seed is not None:
        report.sections.append(
            ("seed", f"{SEED_ENV}={seed} python3 -m pytest '{item.nodeid}'  # replays this test"))


@pytest.fixture(scope="session")
def compiled_kernels():
    """Compile every variant once; a compile error stops the run with its log."""
    from mla_cupy.compiler import get_kernel
    from mla_cupy.variants import all_variants, builds_for

    import cupy
    cc = int(cupy.cuda.Device().compute_capability)
    for key in all_variants():
        if not builds_for(key, cc):
            continue   # e4m3 conversions need sm_89+, wgmma sm_90a
        try:
            get_kernel(key)
        except Exception as e:  # noqa: BLE001 - report and stop
            pytest.exit(f"kernel {key.name} failed to compile:\n{e}", returncode=3)
    return True
