"""How fast the Hopper kernel's producer warpgroup runs when nothing waits for
the tensor cores: the kernel the dispatcher picks for a case, rebuilt with its
wgmma instructions removed (the math warpgroups still wait for every tile, run
the softmax on stale registers and release the buffer), timed beside the
unmodified kernel on the same inputs.  The stripped time bounds what the
producer alone allows (keys dequantised a microsecond per SM); the difference
to the full kernel is what the MMAs and the hand-overs add.  The stripped
kernel's output is garbage: it is timed, never compared.

Ablations (--ablate) then take parts of the fp8 producer's own work away from the
kernel without MMAs, one at a time, to say where its time goes (session 10 found
it bound by the instructions it issues, NOTES.md):
  noscale    the group-scale multiply (fp8_ds_mla; what folding the scales into
             S and P would save)
  noconvert  the whole e4m3 -> bf16 conversion (the raw bytes stored; the narrow kernel
             over fp8 records, render.narrow_rs: its A fragments' e4m3 -> fp16
             conversions, the raw bytes fed to its MMAs)
  nostore    the dequantised tile's stores (the values kept alive, not written)
  nocopy     the bulk copies of the raw records (raw[s] completes on the warps'
             arrivals alone; the bytes dequantised are whatever the buffer held)
  noload     the pair schedule's register loads of the records (zeros dequantised;
             MLA_CUPY_HOPPER_SCHEDULE=pair)
  nolookup   the narrow kernel's copying warps' key lookups past the first tile (each
             tile copies the first tile's records again)
  nomath     the narrow math warpgroups reduced to the hand-over: each tile's wait for
             its chunks (fp8 records: its raw tile) and their release, no MMA, fragment,
             softmax or P^T
  nokeys     the ring's dense 16-bit key copies zero-fill instead of reading (cp.async
             with no source bytes): no key leaves DRAM, every hand-over, lookup, MMA and
             softmax stays (on zeros) — with --keep-mma, the ring's math and hand-overs
             without the memory: is its tile rate the math's or the loads'?
  noexchange the 32-row RS kernel's exchange of partial S^T (render.narrow_features): each
             math warpgroup's softmax runs on its own partial, no store, barrier or load
  nosoftmax  the narrow math warpgroups' softmax reduced to its closing barrier (no max,
             exponentials, O^T rescale or P^T writes; the MMAs read a stale P^T)
  nopeer     the pair schedule's st.async stores into the peer CTA (its full_remote
             barrier completes on the expect-tx of no bytes): what the distributed
             shared memory traffic costs
Ablations join with '+' (nocopy+noconvert+nostore: the producer's skeleton).
--keep-mma applies them to the whole kernel instead: with every producer ablation
joined, what is left is the math warpgroups and the hand-overs, the math's own bound.

    PYTHONPATH=.:tests python3 tools/producer_ceiling.py [CASE ...] [--ablate noscale,noconvert,nostore]
    (default cases: the sparse ds_mla rows; dense fp8_ds_mla cases too)
"""
import argparse
import sys

# The wgmma issue helpers of each family, the first set found taken: the narrow kernel's
# over fp8 records (render.narrow_rs: its register-operand wgmma_rs, and the slot path's
# helpers it also declares), the narrow kernel's (S^T = K Q^T, O^T = V^T P^T; it also
# includes the ring's, unused), the ring's and pair's (Q K^T, P V).
STRIP = (("__device__ __forceinline__ void wgmma_st(", "__device__ __forceinline__ void wgmma_ot(",
          "__device__ __forceinline__ void wgmma_rs("),
         ("__device__ __forceinline__ void wgmma_st(", "__device__ __forceinline__ void wgmma_ot("),
         ("__device__ __forceinline__ void wgmma_qk(", "__device__ __forceinline__ void wgmma_pv_tile("))


def stripped_source(src: str) -> str:
    """The source with the bodies of the two wgmma issue helpers reduced to a return."""
    heads = next((h for h in STRIP if all(src.count(x) == 1 for x in h)), STRIP[-1])
    for head in heads:
        if src.count(head) != 1:
            raise ValueError(f"strip: expected {head!r} once in the kernel, found it {src.count(head)} times")
        at = src.index("{", src.index(head)) + 1
        src = src[:at] + " return;" + src[at:]
    return src


_DEQUANT = "__device__ __forceinline__ uint4 dequant8(const uint2 v, float scale) {"
_STORE_LO = "*reinterpret_cast<uint4*>(base + sw128_offset<KV_CHUNK_BYTES>(ld_n, j)) = lo;"
_STORE_HI = "*reinterpret_cast<uint4*>(base + sw128_offset<KV_CHUNK_BYTES>(ld_n, j + 1)) = hi;"
_STORE_FN = "auto store_piece = [&](int tile, int i, const uint4 v, float scale) {"
_PRODUCER_END = "cp_async_wait<0>();                // (Q, when there was no tile)"
# nostore keeps the converted values alive by folding them into one word, written
# (to a spare shared-memory word) only if it matches a constant: ptxas drops values
# that feed no instruction, empty asm statements included
_SINK = "ablation_sink ^= {0}.x ^ {0}.y ^ {0}.z ^ {0}.w;"
_SINK_USE = ("if (ablation_sink == 0x9e3779b9u) "
             "*reinterpret_cast<volatile u32*>(smem + SMEM_MBAR - 4) = ablation_sink;\n")
# The narrow kernel's math over 16-bit caches (mla_decode_narrow.cu.j2)
_N_MATH_FIRST = "    float s[ST_REGS];\n    if (num_tiles > 0) {\n        issue_st(0, s);"
_N_MATH_LOOP = "    for (int j = 1; j < num_tiles; ++j) {\n        issue_ot(j - 1);"
_N_MATH_LAST = "    if (num_tiles > 0) {\n        issue_ot(num_tiles - 1);"
_N_NOMATH = ("    for (int j = 0; j < num_tiles; ++j) {\n"
             "        wait_landed(j);\n"
             "        release(j, 0, CHUNKS);\n"
             "    }\n")
# The narrow kernel over fp8 records (render.narrow_rs): its math warpgroups' conversions
# of the A fragments (S^T's latent columns, O^T's), its loop, and its copying warps' lookups
_RS_CONVERT = [(f"a[{i}] = e4m3x2_{h}_to_f16x2({x});", f"a[{i}] = {x};") for i, h, x in (
    (0, "lo", "r[2 * k]"), (1, "lo", "r[2 * k + 1]"), (2, "hi", "r[2 * k]"), (3, "hi", "r[2 * k + 1]"),
    (0, "lo", "lo"), (1, "hi", "lo"), (2, "lo", "hi"), (3, "hi", "hi"))]
_RS_MATH_FIRST = "    if (first < num_tiles) {\n        rs_st(first);"
_RS_MATH_LOOP = "    for (; j < num_tiles; j += STEP) {\n        rs_ot(j - STEP);"
_RS_MATH_LAST = "    if (first < num_tiles) {\n        rs_ot(j - STEP);"
_RS_NOMATH = ("    for (int j = first; j < num_tiles; j += STEP) {   // (the warpgroup's tiles)\n"
              "        mbar_wait(raw_full(j), static_cast<u32>((j / RAW_TILES) & 1));\n"
              "        __syncwarp();\n"
              "        if (lane == 0) mbar_arrive(raw_empty(j));\n"
              "    }\n")
_RS_LOOKUP = "            const KeySource nxt = resolve(ahead);   // (fetched a tile ago)\n"
# name -> alternatives, each a list of (old, new) edits of the rendered fp8 kernel: the
# first alternative whose edits are all found exactly once is applied (the narrow
# kernel's before the ring's and pair's)
ABLATIONS = {
    "noscale": [[("        if constexpr (SCALED) {", "        if constexpr (false) {")]],
    "noconvert": [_RS_CONVERT, [(_DEQUANT, _DEQUANT + " return make_uint4(v.x, v.y, v.y, v.x);")]],
    "nocopy": [[("            const bool copy = src.kpos != KPOS_INVALID;", "            const bool copy = false;")],
               [("const bool copy = mine && src.kpos != KPOS_INVALID;", "const bool copy = false;")]],
    "noload": [[("const bool valid = src.kpos != KPOS_INVALID;   // a masked slot is not read: zeros",
                 "const bool valid = false;")]],
    "nokeys": [[("cp_async_16(kv_tile(tile) + sw128_offset<KV_CHUNK_BYTES>(ld_n, j), src.row + j * 16, valid);",
                 "cp_async_16(kv_tile(tile) + sw128_offset<KV_CHUNK_BYTES>(ld_n, j), src.row + j * 16, false);")]],
    "nopeer": [[("constexpr u32 PEER_BYTES = HALF_KEYS * PIECES * 16 + 4 * 4;", "constexpr u32 PEER_BYTES = 0;"),
                ("            st_async_16(peer_smem(off, peer), v, peer_smem(full_remote(g), peer));\n", ""),
                ("                        st_async_4(peer_smem(smem_base + SMEM_VIS + 4 * at, peer), bits, "
                 "peer_smem(full_remote(g), peer));\n", "")]],
    "noexchange": [[("    auto exchange_st = [&](float (&s)[ST_REGS]) {\n",
                     "    auto exchange_st = [&](float (&s)[ST_REGS]) {\n        return;\n")]],
    "nosoftmax": [[("    auto softmax = [&](int tile, float (&s)[ST_REGS]) {\n",
                    "    auto softmax = [&](int tile, float (&s)[ST_REGS]) {\n"
                    "        if constexpr (FEATURES) bar_sync_math(BAR_P);\n        else bar(BAR_P);\n"
                    "        return;\n")]],
    # the copying warps' per-key page lookups for the next tile (the tile's keys reuse
    # the current tile's sources: the copies then read the same rows again)
    "nolookup": [[(_RS_LOOKUP, "            const KeySource nxt = cur;\n"),
                  ("            ahead = fetch(tile + 2);\n", "")]],
    # the narrow kernel's math warpgroups reduced to the hand-over (each tile's wait and
    # its release; no MMA, softmax or P^T): what its loads cost with the math instant
    "nomath": [[(_RS_MATH_FIRST, _RS_NOMATH + _RS_MATH_FIRST.replace("if (first < num_tiles)", "if (false)")),
                (_RS_MATH_LOOP, _RS_MATH_LOOP.replace("j < num_tiles", "j < 0")),
                (_RS_MATH_LAST, _RS_MATH_LAST.replace("if (first < num_tiles)", "if (false)"))],
               [(_N_MATH_FIRST, _N_NOMATH + _N_MATH_FIRST.replace("if (num_tiles > 0)", "if (false)")),
                (_N_MATH_LOOP, _N_MATH_LOOP.replace("j < num_tiles", "j < 0")),
                (_N_MATH_LAST, _N_MATH_LAST.replace("if (num_tiles > 0)", "if (false)"))]],
    "nostore": [[(_STORE_FN, "u32 ablation_sink = 0;\n" + _STORE_FN),
                 (_STORE_LO, _SINK.format("lo")), (_STORE_HI, _SINK.format("hi")),
                 (_PRODUCER_END, _SINK_USE + _PRODUCER_END)]],
}


def _edits(src: str, part: str):
    """ABLATIONS[part]'s first alternative whose edits are all found exactly once in
    src (else its last, whose missing edit ablated_source then names)."""
    return next((edits for edits in ABLATIONS[part] if all(src.count(old) == 1 for old, _ in edits)),
                ABLATIONS[part][-1])


def ablated_source(src: str, ablation: str, keep_mma: bool = False) -> str:
    """The kernel without MMAs (stripped_source; kept with keep_mma) and without
    the parts of the producer's work that ``ablation`` names ('+'-joined ABLATIONS)."""
    if not keep_mma:
        src = stripped_source(src)
    for part in ablation.split("+"):
        for old, new in _edits(src, part):
            if src.count(old) != 1:
                raise ValueError(f"{part}: expected {old!r} once in the kernel, found it {src.count(old)} times")
            src = src.replace(old, new)
    return src


def decode_key_in_use():
    """The memo key of the one Hopper decode kernel the calls so far compiled (None
    when there is not exactly one)."""
    from mla_cupy import compiler
    decode = [k for k in compiler._memo if k[0].startswith("mla_decode") and "_hopper" in k[0]]
    return decode[0] if len(decode) == 1 else None


def parse_ablation(spec: str):
    """'strip' (no wgmma), or 'strip+A', or 'A' ('+'-joined ABLATIONS) -> (ablation, keep_mma)."""
    parts = [x for x in spec.split("+") if x]
    keep_mma = "strip" not in parts
    parts = [x for x in parts if x != "strip"]
    for x in parts:
        if x not in ABLATIONS:
            raise ValueError(f"ablation: expected 'strip' and names from {sorted(ABLATIONS)}, got {x!r} in {spec!r}")
    return "+".join(parts), keep_mma


def swap_decode_kernel(key, src):
    """Put the kernel built from `src` in the dispatcher's place of the decode kernel
    `key` (compiler._memo) and drop the cached plans, which hold their kernels;
    returns a function that puts the original back."""
    import cupy

    from mla_cupy import compiler, dispatch
    from mla_cupy.variants import parse
    variant = parse(key[0])
    mod = cupy.RawModule(code=src, options=(*compiler.BASE_OPTIONS, f"-arch={compiler.device_arch(0)}"),
                         backend="nvrtc")
    kernel = mod.get_function(key[0])
    kernel.max_dynamic_shared_size_bytes = compiler._dynamic_smem(variant)
    original = compiler._memo[key]
    compiler._memo[key] = kernel
    dispatch._eager_plans.clear()

    def restore():
        compiler._memo[key] = original
        dispatch._eager_plans.clear()
    return restore


def transformed_source(key, spec: str) -> str:
    """The rendered source of decode kernel `key` under ablation `spec` (parse_ablation)."""
    from mla_cupy.render import render
    from mla_cupy.variants import parse
    source = render(parse(key[0]))
    ablation, keep_mma = parse_ablation(spec)
    if not ablation:
        return source if keep_mma else stripped_source(source)
    return ablated_source(source, ablation, keep_mma)


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", default=["sparse_ds_mla_b128_sq1_h128", "sparse_ds_mla_b128_sq1_h64"])
    ap.add_argument("--repeats", type=int, default=20)
    ap.add_argument("--ablate", default="",
                    help=f"comma-separated, each one or more of {', '.join(ABLATIONS)} joined by '+' (fp8 layouts)")
    ap.add_argument("--keep-mma", action="store_true", help="ablate the whole kernel, wgmma kept")
    args = ap.parse_args()
    ablations = [a for a in args.ablate.split(",") if a]
    for a in ablations:
        for part in a.split("+"):
            if part not in ABLATIONS:
                ap.error(f"--ablate: expected names from {sorted(ABLATIONS)}, got {part!r} in {a!r}")
    import cupy

    sys.path.insert(0, "tools")
    from mla_cupy import bench, compiler, dispatch
    from mla_cupy.render import render
    from mla_cupy.variants import parse
    from split_sweep import call_with
    timer = bench.Timer()
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]

    for name in args.cases:
        case = bench.case_named(name)
        inputs = bench.build_inputs(case)
        compiler._memo.clear()
        dispatch._eager_plans.clear()
        call, _, p = call_with(case, inputs, None)
        call()
        timer.sync()
        key = decode_key_in_use()
        if key is None:
            print(f"{name}: expected one Hopper decode kernel in use")
            continue
        full_us, _, _ = timer.gpu_us(call, args.repeats)
        source = render(parse(key[0]))

        def time_source(src):   # the case's time with its decode kernel built from src
            restore = swap_decode_kernel(key, src)
            try:
                call, _, _ = call_with(case, inputs, None)
                call()
                timer.sync()
                return timer.gpu_us(call, args.repeats)[0]
            finally:
                restore()

        bare_us = time_source(stripped_source(source))
        # every CTA of a row group dequantises the group's keys: a sparse token's heads, or
        # a dense sequence's tokens x heads, in 64-row CTAs
        rows = case.num_heads * (1 if case.sparse else case.q_len)
        keys = (case.num_tokens * case.sparse_topk if case.sparse else int(case.key_counts().sum()))
        keys *= -(-rows // 64)
        print(f"{name} ({key[0]}, P={p}): full {full_us:.1f} us, without wgmma {bare_us:.1f} us: "
              f"the producer alone {keys / sms / bare_us:.1f} keys/us/SM "
              f"(full kernel {keys / sms / full_us:.1f})", flush=True)
        for a in ablations:
            try:   # (nomath also edits the 16-bit narrow kernels; the others, fp8 producers only)
                src = ablated_source(source, a, args.keep_mma)
            except ValueError:
                print(f"  {a}: its code is not in {key[0]}", flush=True)
                continue
            us = time_source(src)
            ref, what = (full_us, "with wgmma") if args.keep_mma else (bare_us, "without wgmma")
            print(f"  {what}, {a}: {us:.1f} us ({us - ref:+.1f}): "
                  f"{keys / sms / us:.1f} keys/us/SM", flush=True)


if __name__ == "__main__":
    main()
