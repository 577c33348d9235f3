"""Does compute-sanitizer racecheck model the named-barrier hand-off that the
Hopper kernels use between warpgroups (producer: st.shared, bar.arrive;
consumer: bar.sync, ld.shared)?  PTX's memory model makes the arrive
synchronize with the bar.sync that completes the barrier, so that pattern is
race-free.  Three kernels, each one warp writing and another reading:

    arrive_sync   writer st.shared + bar.arrive 1, 64; reader bar.sync 1, 64 + ld.shared
    sync_sync     both bar.sync 1, 64 (control: race-free, a plain barrier)
    no_barrier    no barrier at all (control: a real race)
    arrive_sync_reg  as arrive_sync, barrier id in a register (as the kernels' bar_arrive)
    ping_pong     the kernels' per-tile protocol over 8 rounds: writer bar.sync FREE
                  (from round 1), st.shared, bar.arrive READY; reader bar.sync READY,
                  ld.shared, bar.arrive FREE

Run under racecheck:  compute-sanitizer --tool racecheck python3 tools/racecheck_arrive_probe.py
Each kernel is launched in its own process section, marked by a printed line,
so the report can be attributed (racecheck names the kernel).
"""
import cupy

SOURCE = r"""
extern "C" __global__ void %(name)s(int* out) {
    __shared__ int buf[32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x %% 32;
    if (warp == 0) {
        buf[lane] = lane + 1;
        %(writer_sync)s
    } else {
        %(reader_sync)s
        out[lane] = buf[lane];
    }
}
"""
KINDS = {
    "arrive_sync": ('asm volatile("bar.arrive 1, 64;" ::: "memory");',
                    'asm volatile("bar.sync 1, 64;" ::: "memory");'),
    "sync_sync": ('asm volatile("bar.sync 1, 64;" ::: "memory");',
                  'asm volatile("bar.sync 1, 64;" ::: "memory");'),
    "no_barrier": ("", ""),
}

PING_PONG = r"""
extern "C" __global__ void ping_pong(int* out) {
    __shared__ int buf[32];
    const int warp = threadIdx.x / 32, lane = threadIdx.x % 32;
    int acc = 0;
    for (int j = 0; j < 8; ++j) {
        if (warp == 0) {
            if (j > 0) asm volatile("bar.sync %0, 64;" :: "r"(2) : "memory");
            buf[lane] = lane + j;
            asm volatile("bar.arrive %0, 64;" :: "r"(1) : "memory");
        } else {
            asm volatile("bar.sync %0, 64;" :: "r"(1) : "memory");
            acc += buf[lane];
            asm volatile("bar.arrive %0, 64;" :: "r"(2) : "memory");
        }
    }
    if (warp == 1) out[lane] = acc;
}
"""
KINDS["arrive_sync_reg"] = ('asm volatile("bar.arrive %0, 64;" :: "r"(1) : "memory");',
                            'asm volatile("bar.sync %0, 64;" :: "r"(1) : "memory");')

for name, (w, r) in KINDS.items():
    kernel = cupy.RawKernel(SOURCE % dict(name=name, writer_sync=w, reader_sync=r), name)
    out = cupy.zeros(32, dtype=cupy.int32)
    kernel((1,), (64,), (out,))
    cupy.cuda.runtime.deviceSynchronize()
    print(f"{name}: out ok = {bool((out.get() == cupy.arange(1, 33).get()).all())}", flush=True)

kernel = cupy.RawKernel(PING_PONG, "ping_pong")
out = cupy.zeros(32, dtype=cupy.int32)
kernel((1,), (64,), (out,))
cupy.cuda.runtime.deviceSynchronize()
want = [8 * lane + 28 for lane in range(32)]
print(f"ping_pong: out ok = {out.get().tolist() == want}", flush=True)
