"""How fast the Hopper kernel's producer warpgroup runs when nothing waits for
the tensor cores: the kernel the dispatcher picks for a case, rebuilt with its
wgmma instructions removed (the math warpgroups still wait for every tile, run
the softmax on stale registers and release the buffer), timed beside the
unmodified kernel on the same inputs.  The stripped time bounds what the
producer alone allows (keys dequantised a microsecond per SM); the difference
to the full kernel is what the MMAs and the hand-overs add.  The stripped
kernel's output is garbage: it is timed, never compared.

    PYTHONPATH=.:tests python3 tools/producer_ceiling.py [CASE ...]   (default: the sparse ds_mla rows; dense fp8_ds_mla cases too)
"""
import argparse
import sys

STRIP = ("__device__ __forceinline__ void wgmma_qk(", "__device__ __forceinline__ void wgmma_pv_tile(")


def stripped_source(src: str) -> str:
    """The source with the bodies of the two wgmma issue helpers reduced to a return."""
    for head in STRIP:
        assert src.count(head) == 1, head
        at = src.index("{", src.index(head)) + 1
        src = src[:at] + " return;" + src[at:]
    return src


def main():
    ap = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    ap.add_argument("cases", nargs="*", default=["sparse_ds_mla_b128_sq1_h128", "sparse_ds_mla_b128_sq1_h64"])
    ap.add_argument("--repeats", type=int, default=20)
    args = ap.parse_args()
    import cupy

    sys.path.insert(0, "tools")
    from mla_cupy import bench, compiler
    from mla_cupy.render import render
    from mla_cupy.variants import parse
    from split_sweep import call_with
    timer = bench.Timer()
    sms = cupy.cuda.Device().attributes["MultiProcessorCount"]
    from mla_cupy import dispatch

    def fresh():   # plans hold their kernels: a swapped kernel needs new plans
        dispatch._eager_plans.clear()

    for name in args.cases:
        case = bench.NAMED_CASES[name]
        inputs = bench.build_inputs(case)
        compiler._memo.clear()
        fresh()
        call, _, p = call_with(case, inputs, None)
        call()
        timer.sync()
        decode = [k for k in compiler._memo if k[0].startswith("mla_decode") and "_hopper" in k[0]]
        if len(decode) != 1:
            print(f"{name}: expected one Hopper decode kernel in use, found {decode}")
            continue
        key = decode[0]
        full_us, _, _ = timer.gpu_us(call, args.repeats)
        variant = parse(key[0])
        mod = cupy.RawModule(code=stripped_source(render(variant)),
                             options=(*compiler.BASE_OPTIONS, f"-arch={compiler.device_arch(0)}"),
                             backend="nvrtc")
        kernel = mod.get_function(key[0])
        kernel.max_dynamic_shared_size_bytes = compiler._dynamic_smem(variant)
        original = compiler._memo[key]
        compiler._memo[key] = kernel
        fresh()
        try:
            call, _, _ = call_with(case, inputs, None)
            call()
            timer.sync()
            bare_us, _, _ = timer.gpu_us(call, args.repeats)
        finally:
            compiler._memo[key] = original
            fresh()
        # every CTA of a row group dequantises the group's keys: a sparse token's heads, or
        # a dense sequence's tokens x heads, in 64-row CTAs
        rows = case.num_heads * (1 if case.sparse else case.q_len)
        keys = (case.num_tokens * case.sparse_topk if case.sparse else int(case.key_counts().sum()))
        keys *= -(-rows // 64)
        print(f"{name} ({key[0]}, P={p}): full {full_us:.1f} us, without wgmma {bare_us:.1f} us: "
              f"the producer alone {keys / sms / bare_us:.1f} keys/us/SM "
              f"(full kernel {keys / sms / full_us:.1f})", flush=True)


if __name__ == "__main__":
    main()
