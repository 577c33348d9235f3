"""Every variant renders and NVRTC-compiles without a GPU, for
sm_90a and sm_80, with no register spills and within the shared-memory limit."""
import pytest

from mla_cupy.compiler import compile_offline
from mla_cupy.render import launch_config, render
from mla_cupy.variants import DecodeKey, QuantizeKey, all_variants

VARIANTS = all_variants()


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("key", VARIANTS, ids=lambda k: k.name)
def test_compiles_without_spills(key, arch):
    if isinstance(key, (QuantizeKey, DecodeKey)) and int(arch[3:5]) < key.min_sm:
        pytest.skip(f"{key.name} needs sm_{key.min_sm}+ (e4m3 conversions, wgmma); "
                    f"the dispatcher never picks it on older devices")
    res = compile_offline(key, arch=arch)
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_frame == 0, res.log
    # ptxas serialising warpgroup MMAs (C7515: accumulators touched inside a
    # pipeline stage; C7511: too few registers) would silently cost the
    # Hopper family its overlap.
    assert "C7515" not in res.log and "C7511" not in res.log, res.log
    assert res.registers <= 255
    if isinstance(key, DecodeKey):
        assert res.dynamic_smem == launch_config(key).smem_bytes <= 227 * 1024


@pytest.mark.parametrize("key", VARIANTS, ids=lambda k: k.name)
def test_rendered_source_is_self_contained(key):
    src = render(key)
    assert 'extern "C" __global__' in src and key.name in src
    assert "#include" not in src          # nothing outside the text the cache hashes
    assert render(key) == src             # deterministic: no timestamps or paths
