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
    warpgroups    ping_pong at the kernels' scale: 256 threads, warpgroup 0 writes a
                  float2 per thread and arrives (count 256), warpgroup 1 syncs and reads;
                  on odd rounds the writer first spins ~20 us, so the reader reaches
                  its bar.sync first (the order the kernels mostly see)

    warpgroups_nospin  warpgroups without the spin (arrival order left to the scheduler)

Finding (H200, 2026-12-01, one NAME per process): arrive_sync, sync_sync and
arrive_sync_reg are clean and no_barrier is reported. ping_pong, warpgroups and
warpgroups_nospin each get 7 hazards, one per round after the first, although
their output is correct and the PTX memory model makes them race-free.  So
racecheck loses track of named barriers reused across rounds with bar.arrive,
the pattern of the Hopper kernels' hand-offs (tools/racecheck_sites.py).

Run under racecheck:  compute-sanitizer --tool racecheck python3 tools/racecheck_arrive_probe.py [NAME ...]
(no NAME: every kernel in one process; racecheck names the kernel in its report,
so run one NAME per process to rule out state carried between launches).
"""
import sys

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

KINDS["arrive_sync_reg"] = ('asm volatile("bar.arrive %0, 64;" :: "r"(1) : "memory");',
                            'asm volatile("bar.sync %0, 64;" :: "r"(1) : "memory");')


def run_pair(name):
    w, r = KINDS[name]
    kernel = cupy.RawKernel(SOURCE % dict(name=name, writer_sync=w, reader_sync=r), name)
    out = cupy.zeros(32, dtype=cupy.int32)
    kernel((1,), (64,), (out,))
    cupy.cuda.runtime.deviceSynchronize()
    print(f"{name}: out ok = {bool((out.get() == cupy.arange(1, 33).get()).all())}", flush=True)


# The kernels' per-tile protocol over 8 rounds, one side of `group` threads
# writing and the other reading: writer bar.sync FREE (from round 1), st.shared,
# bar.arrive READY; reader bar.sync READY, ld.shared, bar.arrive FREE.  Either
# way out[t] = sum over rounds of (j + t) = 28 + 8 t.
ROUNDS = r"""
extern "C" __global__ void %(name)s(%(out_type)s* out) {
    __shared__ %(buf_type)s buf[%(group)d];
    const int side = threadIdx.x / %(group)d, t = threadIdx.x %% %(group)d;
    %(out_type)s acc = 0;
    for (int j = 0; j < 8; ++j) {
        if (side == 0) {
            if (j > 0) asm volatile("bar.sync %%0, %(count)d;" :: "r"(%(free)d) : "memory");
            %(spin)s
            buf[t] = %(value)s;
            asm volatile("bar.arrive %%0, %(count)d;" :: "r"(%(ready)d) : "memory");
        } else {
            asm volatile("bar.sync %%0, %(count)d;" :: "r"(%(ready)d) : "memory");
            const %(buf_type)s v = buf[t];
            asm volatile("bar.arrive %%0, %(count)d;" :: "r"(%(free)d) : "memory");
            acc += %(use)s;
        }
    }
    if (side == 1) out[t] = acc;
}
"""
# ping_pong: two warps, ints, barriers 1/2; warpgroups*: two warpgroups, a float2
# per thread, barriers 2/3, and (warpgroups) a ~20 us spin of the writer on odd rounds.
_SPIN = "if (j & 1) { const long long t0 = clock64(); while (clock64() - t0 < 40000) {} }"
ROUND_KINDS = {
    "ping_pong": dict(group=32, out_type="int", buf_type="int", value="t + j", use="v", ready=1, free=2,
                      spin=""),
    "warpgroups": dict(group=128, out_type="float", buf_type="float2", value="make_float2(j, t)",
                       use="v.x + v.y", ready=2, free=3, spin=_SPIN),
}
ROUND_KINDS["warpgroups_nospin"] = dict(ROUND_KINDS["warpgroups"], spin="")


def run_rounds(name):
    k = ROUND_KINDS[name]
    kernel = cupy.RawKernel(ROUNDS % dict(k, name=name, count=2 * k["group"]), name)
    out = cupy.zeros(k["group"], dtype=cupy.int32 if k["out_type"] == "int" else cupy.float32)
    kernel((1,), (2 * k["group"],), (out,))
    cupy.cuda.runtime.deviceSynchronize()
    print(f"{name}: out ok = {out.get().tolist() == [28 + 8 * t for t in range(k['group'])]}", flush=True)


RUNS = {**{name: run_pair for name in KINDS}, **{name: run_rounds for name in ROUND_KINDS}}

if __name__ == "__main__":
    names = sys.argv[1:] or list(RUNS)
    unknown = [n for n in names if n not in RUNS]
    if unknown:
        sys.exit(f"unknown probe {unknown}; expected any of {list(RUNS)}")
    for name in names:
        RUNS[name](name)
