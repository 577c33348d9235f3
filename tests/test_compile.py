"""Every variant renders and NVRTC-compiles without a GPU, for sm_90a and sm_80,
with no register spills; the decode kernels' resources fit the launch the host
makes (launch_config) on each target."""
import dataclasses
import math

import numpy as np
import pytest

from mla_cupy import records
from mla_cupy.compiler import compile_offline
from mla_cupy.render import launch_config, render
from mla_cupy.variants import TILE_ROWS, DecodeKey, QuantizeKey, all_variants

VARIANTS = all_variants()

# Per-SM and per-block resources of the targets (CUDA C Programming Guide,
# "Technical Specifications per Compute Capability"), written out here as the
# independent side of the checks below.
REGISTERS_PER_SM = 65536
REGISTER_GRANULE = 8        # registers per thread are allocated in multiples of 8 (256 per warp)
RESERVED_SMEM_PER_CTA = 1024
SMEM = {"sm_90a": dict(per_block=227 * 1024, per_sm=228 * 1024),
        "sm_80": dict(per_block=163 * 1024, per_sm=164 * 1024)}



def _nvrtc_compile(src: str, name: str, arch: str = "sm_90a", extra: tuple = ()) -> str | None:
    """Compile kernel source with NVRTC (no GPU needed); an error raises.  For a
    virtual ``arch`` (compute_*) the PTX is returned."""
    from cupy.cuda import nvrtc

    from mla_cupy.compiler import BASE_OPTIONS
    prog = nvrtc.createProgram(src, name, [], [])
    try:
        nvrtc.compileProgram(prog, [*BASE_OPTIONS, f"-arch={arch}", *extra])
        if not arch.startswith("compute_"):
            return None
        ptx = nvrtc.getPTX(prog)
    finally:
        nvrtc.destroyProgram(prog)
    return ptx.decode() if isinstance(ptx, bytes) else ptx


def _tool(name: str):
    """A module of tools/ (not a package), imported by path."""
    import sys
    from pathlib import Path
    tools = str(Path(__file__).resolve().parent.parent / "tools")
    if tools not in sys.path:
        sys.path.insert(0, tools)
    return __import__(name)

def registers_per_cta(registers: int, threads: int) -> int:
    return math.ceil(registers / REGISTER_GRANULE) * REGISTER_GRANULE * threads


def resident_ctas(registers: int, threads: int, smem: int, arch: str) -> int:
    """CTAs of one kernel that fit on an SM at once, by registers and shared memory."""
    by_smem = SMEM[arch]["per_sm"] // (smem + RESERVED_SMEM_PER_CTA)
    return min(REGISTERS_PER_SM // registers_per_cta(registers, threads), by_smem)


@pytest.mark.parametrize("arch", ["sm_90a", "sm_80"])
@pytest.mark.parametrize("key", VARIANTS, ids=lambda k: k.name)
def test_compiles_without_spills(key, arch):
    if isinstance(key, (QuantizeKey, DecodeKey)) and int(arch[3:5]) < key.min_sm:
        pytest.skip(f"{key.name} needs sm_{key.min_sm}+ (e4m3 conversions, wgmma); "
                    f"the dispatcher never picks it on older devices")
    res = compile_offline(key, arch=arch)
    assert res.spill_stores == 0 and res.spill_loads == 0 and res.stack_frame == 0, res.log
    # ptxas serialising warpgroup MMAs (C7514 / C7515: accumulators read or
    # written inside a pipeline stage; C7511: too few registers) silently costs
    # the Hopper family its overlap: 23caf1a ran 1.8x slower with C7514, its
    # SASS waiting after every one of 114 HGMMAs.
    assert "wgmma.mma_async instructions are serialized" not in res.log, res.log
    assert not any(f"C75{n}" in res.log for n in range(10, 20)), res.log
    if not isinstance(key, DecodeKey):
        return
    cfg = launch_config(key)
    smem = res.static_smem + cfg.smem_bytes
    # The kernel computes its shared-memory carve-up itself and static_asserts it
    # equals launch_config's; that this compiled proves they agree.
    assert f"static_assert(SMEM_BYTES == {cfg.smem_bytes}," in render(key)
    # A launch with launch_config's threads must find the registers ptxas used; this
    # fails when the host launches more threads than __launch_bounds__ budgeted for.
    assert registers_per_cta(res.registers, cfg.num_threads) <= REGISTERS_PER_SM, res.line()
    if smem > SMEM[arch]["per_block"]:
        # Too big for this target (64-row tiles on an A100): the dispatcher falls back
        # to the largest smaller tile that fits, so one must.
        smaller = [r for r in TILE_ROWS if r < key.tile_rows]
        fits = [r for r in smaller if res.static_smem + launch_config(
            dataclasses.replace(key, tile_rows=r)).smem_bytes <= SMEM[arch]["per_block"]]
        assert fits, f"{key.name}: {smem} B of shared memory and no smaller tile fits {arch}"
    elif key.tile_rows == 16 and arch == "sm_90a" and key.backend.value == "portable":
        # launch_config keeps portable 16-row tiles at 2 stages so that two CTAs share an
        # SM (the narrow Hopper kernel's 16-row tile runs one CTA an SM, like the ring)
        assert resident_ctas(res.registers, cfg.num_threads, smem, arch) >= 2, res.line()


@pytest.mark.parametrize("key", VARIANTS, ids=lambda k: k.name)
def test_rendered_source_is_self_contained(key):
    src = render(key)
    assert 'extern "C" __global__' in src and key.name in src
    assert "#include" not in src          # nothing outside the text the cache hashes
    assert render(key) == src             # deterministic: no timestamps or paths


SEESAW_KEYS = [k for k in VARIANTS if isinstance(k, DecodeKey) and k.schedule.value == "seesaw"]


@pytest.mark.parametrize("key", SEESAW_KEYS, ids=lambda k: k.name)
def test_each_schedule_renders_its_own_kernel(key):
    """A seesaw key renders the seesaw template with 64-key tiles; the ring key
    of the same variant the ring template with 32-key tiles (the schedule is
    part of the name, so the two never share a cache entry or a symbol)."""
    ring = dataclasses.replace(key, schedule="ring", multicast=False, segments=False)
    src, ring_src = render(key), render(ring)
    assert ("__cluster_dims__(2, 1, 1)" in src) == key.multicast   # the `_multicast` twin: clusters of two
    assert 'dense MLA decode, "seesaw"' in src and "constexpr int BLOCK_N = 64;" in src
    assert 'dense MLA decode, "seesaw"' not in ring_src and "constexpr int BLOCK_N = 32;" in ring_src
    assert launch_config(key).block_n == 64 and launch_config(ring).block_n == 32


HOPPER_KEYS = [k for k in VARIANTS if isinstance(k, DecodeKey) and k.backend.value == "hopper"]


def test_narrow_fp8_kernels_decode_in_the_math():
    """The narrow kernel's fp8 records at 16 and 32 rows, dense or sparse, are read by the
    math warpgroups themselves (render.narrow_rs: two warps of one warpgroup copy them; no
    producer decodes them); the launch, the rendered constant and the thread count agree."""
    from mla_cupy.render import narrow_consumers, narrow_producers, narrow_rs
    narrow = [k for k in HOPPER_KEYS if k.schedule.value == "narrow"]
    assert {(k.layout.value, k.sparsity.value) for k in narrow if narrow_rs(k)} == {
        (layout, sparsity) for layout in ("fp8", "fp8_ds_mla") for sparsity in ("dense", "sparse")}
    assert {k.tile_rows for k in narrow if narrow_rs(k)} == {16, 32}
    assert not any(k.layout.value in ("fp8", "fp8_ds_mla") and not narrow_rs(k) for k in narrow)
    for key in narrow:
        producers = narrow_producers(key)
        assert producers == 1, key.name
        assert launch_config(key).num_threads == 128 * (narrow_consumers(key) + producers), key.name
        assert f"constexpr int PRODUCERS = {producers};" in render(key), key.name


def test_narrow_rs_kernels_split_tiles_at_16_rows_and_features_at_32():
    """Under narrow_rs at 16 rows two math warpgroups take alternate tiles
    (render.narrow_alternate, 384 threads, each all 16 rows) over a ring of an even number of
    raw tiles, so each raw tile has one reader (with an odd ring a warpgroup's wait could
    read a phase as done before the other's tile had landed: tests/test_hopper_protocol.py);
    at 32 rows both read every tile, each half of its columns (render.narrow_features: each
    raw tile freed by the two warpgroups' eight warps, the partial scores summed through
    shared memory, each warpgroup the softmax of its 16 rows); no other narrow kernel does either."""
    from mla_cupy.render import (narrow_alternate, narrow_consumers, narrow_features, narrow_rs,
                                 narrow_wg_rows)
    narrow = [k for k in HOPPER_KEYS if k.schedule.value == "narrow"]
    assert any(narrow_rs(k) for k in narrow)
    for key in narrow:
        cfg, src = launch_config(key), render(key)
        assert narrow_alternate(key) == (narrow_rs(key) and key.tile_rows == 16), key.name
        assert narrow_features(key) == (narrow_rs(key) and key.tile_rows == 32), key.name
        assert f"constexpr bool ALTERNATE = {'true' if narrow_alternate(key) else 'false'};" in src, key.name
        assert f"constexpr bool FEATURES = {'true' if narrow_features(key) else 'false'};" in src, key.name
        if narrow_features(key):
            assert narrow_consumers(key) == 2 and narrow_wg_rows(key) == key.tile_rows == 32, key.name
            assert cfg.num_threads == 384 and cfg.num_stages >= 3, (key.name, cfg.num_stages)
            assert "mbar_init(raw_empty(i), FEATURES ? 4 * CONSUMERS : 4);" in src, key.name
            assert src.count("if constexpr (FEATURES) exchange_st(s);") == 2, key.name
            # each warpgroup the softmax of its 16 rows (session 47): half the scores a thread
            assert "constexpr int SM_REGS = FEATURES ? ST_REGS / CONSUMERS : ST_REGS;" in src, key.name
            assert "constexpr int FRAG_BUFS = 3;" in src, key.name
        if narrow_alternate(key):
            assert narrow_consumers(key) == 2 and narrow_wg_rows(key) == key.tile_rows == 16, key.name
            assert cfg.num_threads == 384, key.name
            assert cfg.num_stages % 2 == 0 and cfg.num_stages >= 4, (key.name, cfg.num_stages)
            assert f"constexpr int RAW_TILES = RS ? {cfg.num_stages} : 1;" in src, key.name
            # each warpgroup keeps session 43's per-step pipelining: three MMA groups in
            # flight, each step's ldmatrix a step ahead (keyed on one math warpgroup, the
            # first landed form of these kernels ran without both)
            assert "constexpr int FRAG_BUFS = 3;" in src, key.name
            assert "latent_raw(t, c0 + c + 1, raw);   // the next step's" in src, key.name
            assert "v_raw(t, c0 + c + 1, raw);   // the next step's" in src, key.name


def _producer_bank_columns(row_bytes: int, lat_pieces: int, skew: int):
    """The 16-byte bank columns (0..7) of an fp8 producer's shared-memory accesses,
    per quarter warp (eight consecutive keys n of one part) and per instruction: its reads
    of the staged records (piece k of key n at n row_bytes + 16 k within its part, key n's
    i-th read being piece (i & ~7) | ((i + skew n) & 7)), and its two stores a piece into the
    128-byte-swizzled slot or tile (columns 2 k and 2 k + 1 of the chunk, row n:
    wgmma.cuh.j2's sw128_offset)."""
    reads, stores = [], []
    for i in range(lat_pieces):
        pieces = [(i & ~7) | ((i + skew * n) & 7) for n in range(8)]
        reads.append([(n * row_bytes // 16 + k) % 8 for n, k in enumerate(pieces)])
        for half in (0, 1):
            stores.append([((2 * k + half) & 7) ^ n for n, k in enumerate(pieces)])
    return reads, stores


def test_fp8_producer_reads_and_stores_are_bank_conflict_free():
    """Each quarter warp's LDS.128 of the staged records and STS.128 into the slots or
    tiles touch eight distinct 16-byte bank columns for every kernel whose producer
    dequantises records, the ring's (render.raw_skew rotates `fp8` keys' reads: unrotated,
    576-byte rows fall in two columns, 4-way conflicted, and 512-byte rows in one); the
    rendered kernel carries the skew.  A thread reads eight pieces of a group (its
    128-column group)."""
    from mla_cupy.render import narrow_rs, raw_skew
    staged = [k for k in HOPPER_KEYS if k.schedule.value in ("narrow", "ring")
              and k.layout.value in ("fp8", "fp8_ds_mla") and not narrow_rs(k)]
    assert {k.schedule.value for k in staged} == {"ring"}   # (the narrow kernel's fp8 rows: narrow_rs)
    for key in staged:
        skew = raw_skew(key)
        lat_pieces = 8
        reads, stores = _producer_bank_columns(key.row_bytes, lat_pieces, skew)
        assert all(len(set(r)) == 8 for r in reads), key.name
        assert all(len(set(s)) == 8 for s in stores), key.name
        src = render(key)
        assert f"constexpr int SKEW = {skew};" in src and "skewed_piece<SKEW>(" in src, key.name
        assert "return SKEW == 0 ? i : (i & ~7) | ((i + SKEW * key) & 7);" in src, key.name
        unskewed, _ = _producer_bank_columns(key.row_bytes, lat_pieces, 0)
        assert (skew == 0) == all(len(set(r)) == 8 for r in unskewed), key.name
        if key.layout.value == "fp8" and key.d_qk == 576:
            # the e4m3 rope (four 16-byte pieces after the 512 latent bytes), read by key n
            # from piece (own + n) % 4: two keys a column at most, stores in eight columns
            assert "return SKEW == 0 ? own : (own + key) & 3;" in render(key), key.name
            for own in range(4):
                pieces = [(own + n) & 3 for n in range(8)]
                assert len({(n * key.row_bytes // 16 + 32 + q) % 8 for n, q in enumerate(pieces)}) == 4
                for half in (0, 1):
                    assert len({((2 * q + half) & 7) ^ n for n, q in enumerate(pieces)}) == 8
    assert {raw_skew(k) for k in staged if k.layout.value == "fp8_ds_mla"} == {0}
    assert {raw_skew(k) for k in staged if k.layout.value == "fp8"} == {5, 1}


@pytest.mark.parametrize("key", HOPPER_KEYS, ids=lambda k: k.name)
def test_every_hopper_wgmma_takes_the_operand_type_its_records_decode_to(key):
    """fp16 MMAs for fp16 caches, for `fp8` rows in the narrow schedule (e4m3 -> fp16 is
    exact and one conversion per two values; its bf16 queries go to fp16 in shared
    memory) and for `fp8_ds_mla` records in the narrow kernel (whose math applies
    the group scales), bf16 for everything else (docs/spec.md section 3, Precision).  The
    narrow ones of those (render.narrow_rs) carry one bf16 wgmma besides: the form
    that reads `fp8_ds_mla`'s bf16 rope as it is (fp8's kernels never reach it: its SASS has
    no BF16 HGMMA, checked on the CPU in session 41)."""
    from mla_cupy.render import hopper_mma_type, narrow_rs
    narrow = key.schedule.value == "narrow"
    f16 = (key.layout.value == "fp16" or (key.layout.value == "fp8" and narrow)
           or (key.layout.value == "fp8_ds_mla" and narrow))
    assert hopper_mma_type(key) == ("f16" if f16 else "bf16")
    src = render(key)
    wgmmas = [line for line in src.splitlines() if "wgmma.mma_async" in line]
    rope = [w for w in wgmmas if ".f32.bf16.bf16" in w] if narrow_rs(key) else []
    assert len(rope) == (1 if narrow_rs(key) else 0), key.name
    assert narrow_rs(key) == (narrow and key.layout.value in ("fp8", "fp8_ds_mla"))
    assert wgmmas and all(".f32.f16.f16" in w if f16 else ".f32.bf16.bf16" in w
                          for w in wgmmas if w not in rope), key.name
    if key.schedule.value == "narrow" and key.layout.value in ("fp8", "fp8_ds_mla"):
        assert ("constexpr bool MMA_F16 = true;" in src) == f16
        math_scales = key.layout.value == "fp8_ds_mla" and f16
        assert ("constexpr bool MATH_SCALES = true;" in src) == math_scales, key.name


@pytest.mark.parametrize("twin", ["", "_multicast"])
@pytest.mark.parametrize("pair,per_warp,start", [(None, False, False), (3, False, False), (3, True, False),
                                                 (None, False, True)],
                         ids=["phases", "pair", "pair_per_warp", "start"])
def test_phase_probe_instruments_the_seesaw(pair, per_warp, start, twin):
    """tools/phase_probe.py stamps lines of the seesaw kernel (and of its `_multicast`
    twin, which h128 cases run) found by anchor text: every anchor is still there once
    (it asserts so) and the instrumented source compiles, so a kernel edit that moves one
    shows here, not on the GPU."""
    phase_probe = _tool("phase_probe")
    assert phase_probe.NAME + twin in phase_probe.NAMES
    src = phase_probe.instrumented_source(pair, per_warp, start, phase_probe.NAME + twin)
    # the declaration; a stamp per hand-over, a start step (and each math warpgroup's loop
    # entry), or eight phase stamps and the tile count
    stamps = (len(phase_probe.START_STEPS) + 2 if start else len(phase_probe.PAIR_STEPS) if pair is not None
              else 9)
    assert src.count("g_prof[") == 1 + stamps
    _nvrtc_compile(src, "probe.cu")


def test_phase_probe_instruments_the_segments_twins_boundaries():
    """tools/phase_probe.py --boundary stamps the `_segments` twin's hand-overs at its
    segment boundaries (warpgroup 0's and the loader's, each in its segment's slots): every
    anchor is there once and the instrumented source compiles."""
    phase_probe = _tool("phase_probe")
    src = phase_probe.instrumented_source(None, name=phase_probe.SEGMENTS_NAME, boundary=True)
    assert src.count("g_prof[") == 1 + len(phase_probe.BOUNDARY_STEPS)
    _nvrtc_compile(src, "boundary_probe.cu")


def test_phase_probe_reports_a_boundary_from_the_last_pairs(capsys):
    """phase_probe --boundary: each step of boundary k timed from warpgroup 0's pairs of
    segment k - 1, over the CTAs that reached segment k."""
    import numpy as np
    pp = _tool("phase_probe")
    a = np.zeros((2, pp.SLOTS), dtype=np.int64)
    loader = 2 * pp.PER_WG
    for i in range(2):
        a[i, 0:4] = [1000, 3000, 500, 800]          # segment 0: pairs done at 1 us, releases at 3
        a[i, 4:8] = [9000, 11000, 6000, 7000 + i]   # segment 1: Q landed 5 us after, first S 6
        a[i, loader + 4: loader + 6] = [500, 4000]  # the loader: record at -0.5 us, first tile at 3
    pp.report_boundary("x", None, a)
    out = capsys.readouterr().out
    assert "boundary 1 (2 CTAs)" in out and "boundary 2" not in out
    assert "kept releases made             2.00" in out and "loader: record taken          -0.50" in out
    assert "loader: first tile issued      3.00" in out and "first S retired                6.00" in out


def test_phase_probe_reports_a_start_from_the_ctas_entry(capsys):
    """phase_probe --start: each step's time since its CTA's entry (warpgroup 0's stamp),
    medians over the CTAs that reached both pair loops, steps in the order they happen."""
    import numpy as np
    pp = _tool("phase_probe")
    a = np.zeros((3, pp.SLOTS), dtype=np.int64)
    for i, entry in enumerate((1000, 5000, 9000)):
        for wg, k, since in [(0, 0, 0), (1, 0, 10), (2, 0, 20), (0, 1, 500), (0, 2, 900), (1, 2, 950),
                             (2, 2, 1000), (2, 3, 1500 + 100 * i), (0, 3, 4000),
                             (1, 3, 4100), (0, 4, 6000), (1, 4, 6500), (0, 5, 7000), (1, 5, 7200)]:
            a[i, pp.PER_WG * wg + k] = entry + since
    a[2, pp.PER_WG + pp.START_LOOP_SLOT] = 0        # a CTA without keys: left out
    pp.report_start("case", 1, a)
    lines = capsys.readouterr().out.splitlines()
    assert lines[0] == "case P=1: the start of 2 CTAs (us since the CTA's entry)"
    steps = [line.split()[:2] for line in lines[1:]]
    assert [s[0] for s in steps][:5] == ["wg0", "wg0", "wg1", "wg2", "wg2"] and "loader:" in lines[5]
    assert lines[5].split("[")[0].split()[-1] == "1.55"     # the loader's copies: 1.5 and 1.6 us after entry
    assert "pair loop entered" in lines[-1] and lines[-1].split()[0] == "wg1"


def test_ring_probe_instruments_the_ring():
    """tools/ring_probe.py stamps the dense ring kernel by anchor text (segment mode's
    boundaries): every anchor is found once and the instrumented source compiles."""
    ring_probe = _tool("ring_probe")
    src = ring_probe.instrumented_source(ring_probe.NAME)
    # the declaration, the entry, a segment's start, loop end (and its tile count) and epilogue
    assert src.count("g_prof[") == 1 + 5
    _nvrtc_compile(src, "ring_probe.cu")


def test_ring_probe_stamps_a_tiles_hand_overs():
    """ring_probe.py --tile: a clock64 stamp at each of TILE_STEPS' hand-overs of the ring's
    warpgroups 0 and 1, every anchor found once, and the instrumented source compiles."""
    ring_probe = _tool("ring_probe")
    src = ring_probe.tile_source(ring_probe.NAME, 3)
    assert src.count("g_prof[") == 1 + len(ring_probe.TILE_STEPS)
    assert src.count("%%clock64") == len(ring_probe.TILE_STEPS)
    _nvrtc_compile(src, "ring_tile_probe.cu")


@pytest.mark.parametrize("rows", [16, 32])
def test_narrow_phases_instruments_the_narrow_kernel(rows):
    """tools/narrow_phases.py stamps the 16-bit narrow kernel by anchor text: every anchor
    is found once and the instrumented source compiles."""
    narrow_phases = _tool("narrow_phases")
    src, loader_slot = narrow_phases.instrumented_source(
        f"mla_decode_bf16_causal_dense_fold0_m{rows}_hopper_narrow", 1 if rows == 16 else 2)
    # the declaration, eight math stamps, four in the shares' scan, five of the loader, one
    # statement of two counters
    assert src.count("g_prof[") == 1 + 8 + 4 + 5 + 2
    assert loader_slot == (16 if rows == 16 else 32)
    _nvrtc_compile(src, "narrow_probe.cu")


def test_phase_probe_stamps_sum_the_kernels_of_a_case():
    """phase_probe.Stamps, what install and install_seesaws return: fill clears every
    kernel's stamps, read sums them (a call runs one kernel of the set)."""
    import numpy as np
    phase_probe = _tool("phase_probe")
    one, other = np.zeros(4, np.uint64), np.zeros(4, np.uint64)
    stamps = phase_probe.Stamps([one, other])
    stamps.fill(7)
    assert (one == 7).all() and (other == 7).all()
    other[:] = 0
    one[:] = [1, 2, 3, 4]
    assert stamps.read().tolist() == [1, 2, 3, 4]


def test_narrow_phases_separates_a_boundarys_cost_from_the_tiles():
    """tools/narrow_phases.py's fit of the CTAs' spans: spans made of a fixed part, a cost a
    tile and a cost a segment boundary (plus noise) give those three back; CTAs whose
    boundaries do not vary give no fit."""
    import numpy as np
    narrow_phases = _tool("narrow_phases")
    rng = np.random.default_rng(7)
    tiles = rng.integers(100, 140, 132)
    segments = rng.integers(1, 4, 132)
    spans = 9.0 + 2.33 * tiles + 15.0 * (segments - 1) + rng.normal(0, 0.2, 132)
    fixed, per_tile, per_bound = narrow_phases.boundary_fit(spans, tiles, segments)
    assert abs(fixed - 9.0) < 1.5 and abs(per_tile - 2.33) < 0.02 and abs(per_bound - 15.0) < 0.2
    assert narrow_phases.boundary_fit(spans, tiles, np.ones(132)) is None


def test_producer_ceiling_strips_the_wgmmas_and_still_compiles():
    """tools/producer_ceiling.py removes the wgmma issue helpers' bodies of the
    sparse ds_mla kernel: both helpers are found once and the result compiles."""
    from mla_cupy.variants import parse
    producer_ceiling = _tool("producer_ceiling")
    src = producer_ceiling.stripped_source(render(parse("mla_decode_fp8_ds_mla_null_sparse_fold0_hopper")))
    assert src.count(" return;") >= 2
    _nvrtc_compile(src, "ceiling.cu")


@pytest.mark.parametrize("ablation, keep_mma", [("noscale", False), ("noconvert", False), ("nostore", False),
                                                ("nocopy", False), ("nocopy+noconvert+nostore", True)])
@pytest.mark.parametrize("name", ["mla_decode_fp8_ds_mla_null_sparse_fold0_hopper",
                                  "mla_decode_fp8_causal_dense_fold0_hopper"])
def test_producer_ablations_edit_the_producer_and_compile(name, ablation, keep_mma):
    """Each of producer_ceiling.py's ablations (and a '+'-joined one on the whole
    kernel, wgmma kept) finds its code once in both fp8 layouts' kernels, changes
    the source, and the result compiles."""
    from mla_cupy.variants import parse
    producer_ceiling = _tool("producer_ceiling")
    source = render(parse(name))
    base = source if keep_mma else producer_ceiling.stripped_source(source)
    src = producer_ceiling.ablated_source(source, ablation, keep_mma)
    assert src != base
    qk = src.index("{", src.index(producer_ceiling.STRIP[-1][0])) + 1
    assert (src[qk:qk + len(" return;")] == " return;") != keep_mma   # stripped unless kept
    _nvrtc_compile(src, "ablation.cu")


def test_the_ring_without_key_reads_compiles():
    """producer_ceiling.py's nokeys: the dense 16-bit ring's key copies zero-fill without a
    source (every copy of a key tile, none of Q's), and the kernel still compiles."""
    from mla_cupy.variants import parse
    producer_ceiling = _tool("producer_ceiling")
    source = render(parse("mla_decode_bf16_causal_dense_fold0_hopper"))
    src = producer_ceiling.ablated_source(source, "nokeys", keep_mma=True)
    assert src.count("src.row + j * 16, false);") == 1 and "src.row + j * 16, valid);" not in src
    assert src.count("cp_async_16(") == source.count("cp_async_16(")   # Q's copies untouched
    _nvrtc_compile(src, "nokeys.cu")


@pytest.mark.parametrize("ablation", ["strip", "nomath", "strip+nomath"])
def test_producer_ablations_reach_the_narrow_kernels_16_bit_math(ablation):
    """The narrow kernel over a 16-bit cache: its wgmma helpers (wgmma_st, wgmma_ot) are
    stripped, and nomath reduces its math warpgroups to each tile's wait and release (its
    loading warp's TMA boxes alone); the result compiles."""
    from mla_cupy.variants import parse
    producer_ceiling = _tool("producer_ceiling")
    name = "mla_decode_bf16_causal_dense_fold0_m16_hopper_narrow"
    source = render(parse(name))
    src = producer_ceiling.transformed_source((name,), ablation)
    abl, keep_mma = producer_ceiling.parse_ablation(ablation)
    st = src.index("{", src.index(producer_ceiling.STRIP[1][0])) + 1
    assert (src[st:st + len(" return;")] == " return;") != keep_mma
    base = source if keep_mma else producer_ceiling.stripped_source(source)
    assert (src != base) == bool(abl)
    if "nomath" in abl:   # no MMA is issued: each issue call sits under a false condition
        assert src.count("if (false) {") == 2 and "j < 0; ++j) {\n        issue_ot(j - 1);" in src
    _nvrtc_compile(src, "narrow_ablation.cu")


@pytest.mark.parametrize("ablation", ["strip", "strip+noconvert", "strip+nocopy", "strip+nolookup",
                                      "noconvert", "nomath", "nocopy+nomath", "nocopy", "nocopy+noconvert"])
@pytest.mark.parametrize("name", ["mla_decode_fp8_ds_mla_null_dense_fold0_m16_hopper_narrow",
                                  "mla_decode_fp8_causal_dense_fold0_m16_hopper_narrow",
                                  "mla_decode_fp8_ds_mla_null_sparse_fold0_m16_hopper_narrow",
                                  "mla_decode_fp8_causal_dense_fold0_m32_hopper_narrow",
                                  "mla_decode_fp8_ds_mla_null_sparse_fold1_m32_hopper_narrow"])
def test_producer_ablations_reach_the_narrow_kernels_register_operand_math(name, ablation):
    """The narrow kernel over fp8 records (render.narrow_rs): 'strip' empties its RS wgmma
    helper as well as the slot path's (else its MMAs would stay), noconvert feeds the raw
    e4m3 bytes of all eight A-fragment conversions to the MMAs, nolookup and nocopy edit
    its copying warps (not the unused producer's code), nomath leaves each raw tile's wait
    and release only; the result compiles."""
    from mla_cupy.variants import parse
    producer_ceiling = _tool("producer_ceiling")
    source = render(parse(name))
    src = producer_ceiling.transformed_source((name,), ablation)
    abl, keep_mma = producer_ceiling.parse_ablation(ablation)
    for head in ("void wgmma_rs(", "void wgmma_st(", "void wgmma_ot("):
        at = src.index("{", src.index(head)) + 1
        assert (src[at:at + len(" return;")] == " return;") != keep_mma, head
    base = source if keep_mma else producer_ceiling.stripped_source(source)
    assert (src != base) == bool(abl)
    if "noconvert" in abl:
        assert "_to_f16x2(r[" not in src and "_to_f16x2(lo)" not in src and "_to_f16x2(hi)" not in src
    if "nolookup" in abl:
        assert "            const KeySource nxt = cur;\n" in src
    if "nocopy" in abl:
        assert src.count("const bool copy = false;") == 1
    if "nomath" in abl:
        assert src.count("if (false) {\n        rs_") == 2 and "j < 0; j += STEP) {\n        rs_ot(j - STEP);" in src
        assert "if (lane == 0) mbar_arrive(raw_empty(j));" in src
    _nvrtc_compile(src, "narrow_rs_ablation.cu")


def test_narrow_probe_compiles_and_its_reference_is_the_math():
    """tools/narrow_probe.py's kernel (the keys-as-M MMA forms) compiles for sm_90a,
    and its NumPy reference computes S^T = K Q^T, the rows' maxima and O^T = V^T P^T."""
    narrow_probe = _tool("narrow_probe")
    _nvrtc_compile(narrow_probe.render(), "narrow_probe.cu")
    _nvrtc_compile(narrow_probe.render_rate(), "narrow_rate.cu")
    rng = np.random.default_rng(0)
    k = rng.standard_normal((narrow_probe.KEYS, narrow_probe.D_QK))
    q = rng.standard_normal((narrow_probe.ROWS, narrow_probe.D_QK))
    pt = rng.standard_normal((narrow_probe.ROWS, narrow_probe.KEYS))
    st, mx, p, ot = narrow_probe.reference(k, q, pt)
    assert st.shape == (narrow_probe.KEYS, narrow_probe.ROWS) and np.allclose(st[3, 5], k[3] @ q[5])
    assert np.allclose(mx, st.max(axis=0)) and np.allclose(p.max(axis=1), 1.0)
    assert ot.shape == (narrow_probe.D_V, narrow_probe.ROWS)
    assert np.allclose(ot[7, 2], k[:, 7] @ pt[2])


def test_rs_probe_compiles_and_its_records_are_the_format():
    """tools/rs_probe.py's kernels (A built in registers from fp8_ds_mla records)
    compile for sm_90a, and the records it writes decode, through the reference's
    own reading of the format, to the values it packed."""
    import ml_dtypes
    rs_probe = _tool("rs_probe")
    _nvrtc_compile(rs_probe.render(), "rs_probe.cu")
    raw, k = rs_probe.make_records(np.random.default_rng(0))
    assert raw.shape == (rs_probe.KEYS, 656) and k.shape == (rs_probe.KEYS, rs_probe.D_QK)
    scales = raw[:, 512:528].copy().view("<f4")
    lat = raw[:, :512].view(ml_dtypes.float8_e4m3fn).astype(np.float32)
    want = (lat * np.repeat(scales, 128, axis=1)).astype(ml_dtypes.bfloat16).astype(np.float64)
    assert np.array_equal(k[:, :512], want) and np.all(np.isfinite(k))
    assert np.array_equal(k[:, 512:], raw[:, 528:].copy().view(ml_dtypes.bfloat16).astype(np.float64))


def test_convert_rate_modes_compile():
    """tools/convert_rate.py renders each mode from the production fp8 helpers and
    the kernel compiles."""
    convert_rate = _tool("convert_rate")
    for mode in convert_rate.MODES:
        src = convert_rate.render(mode)
        assert f"constexpr int MODE = {convert_rate.MODES.index(mode)};" in src
        _nvrtc_compile(src, "convert_rate.cu")


def _ptx(key) -> str:
    """NVRTC's PTX of a variant for compute_90a (no ptxas, no GPU)."""
    return _nvrtc_compile(render(key), f"{key.name}.cu", "compute_90a", ("-ftz=true",))


@pytest.mark.parametrize("key", [k for k in VARIANTS if isinstance(k, DecodeKey) and k.schedule.value == "seesaw"
                                 and k.layout.value == "bf16"], ids=lambda k: k.name)
def test_the_seesaw_divides_by_no_runtime_value_between_its_wgmmas(key):
    """Whatever integer work runs between a math warpgroup's wgmmas delays them.  A
    division by a run-time int is a reciprocal, a multiply and corrections with a
    branch (~20 SASS instructions): warp 0's page lookups, two a box, cost the
    seesaw's rows 8-12% on the H200 (session 19, tools/results/NOTES.md) until
    PageDiv's multiply-high replaced them (and session 20 moved the lookups to the
    loading warpgroup, whose page divisor is made in the set-up).  In PTX a
    division by a constant keeps its immediate (ptxas makes it a shift or a
    multiply); by a register, it is the slow one."""
    import re
    lines = _ptx(key).splitlines()
    mma = [i for i, line in enumerate(lines) if "wgmma.mma_async" in line]
    assert mma, "no wgmma in the seesaw's PTX"
    divisions = [line.strip() for line in lines[mma[0]:mma[-1]]
                 if re.match(r"\s*(div|rem)\.[su](32|64)\s+%\w+,\s*%\w+,\s*%\w+;", line)]
    assert not divisions, f"{key.name}: run-time divisions between the wgmmas: {divisions}"


def test_nomath_ablation_reaches_the_16_bit_narrow_kernel():
    """producer_ceiling.py's nomath (the math warpgroup reduced to its waits and
    releases) edits the bf16 narrow kernel too, so the TMA loader's own rate can be
    timed; the result compiles."""
    from mla_cupy.variants import parse
    producer_ceiling = _tool("producer_ceiling")
    name = "mla_decode_bf16_causal_dense_fold0_m16_hopper_narrow"
    src = producer_ceiling.transformed_source((name,), "nomath")
    assert src != render(parse(name)) and src.count("if (false) {") == 2
    _nvrtc_compile(src, "narrow_nomath.cu")


def test_compile_times_match_keeps_one_variant_a_schedule():
    """tools/compile_times.py --match: the README's subset, one Hopper variant a schedule
    and twin (a cold run of the whole family outlasts a device call), in all_variants'
    order; no filter keeps the family."""
    ct = _tool("compile_times")
    every = [k.name for k in ct._variants("hopper")]
    subset = [k.name for k in ct._variants("hopper", "readme")]
    assert subset == [k.name for k in ct._variants("hopper", ct.README_MATCH)]
    assert subset == [n for n in every if n in set(subset)]
    suffixes = {n.split("hopper", 1)[1] for n in subset}
    assert suffixes == {n.split("hopper", 1)[1] for n in every}, suffixes
    assert len(subset) == 12 and len(every) > 100
