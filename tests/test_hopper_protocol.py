"""The hand-overs of the Hopper decode kernels, modelled on the CPU.

kernels/hopper/mla_decode_wgmma.cu.j2 runs two warpgroups that meet on named
barriers (bar.arrive / bar.sync with both warpgroups counted) and on mbarriers
with one producer and one waiting warpgroup (modelled the same way, one
barrier per buffer).  A schedule in
which one side waits for an arrival the other only makes after waiting itself
hangs the GPU, and an arrival nobody syncs on leaves a barrier mid-phase at
exit.  Each warpgroup below is the kernel's sequence of barrier operations for
a CTA of ``n`` key tiles and ``stages`` tile buffers, in the kernel's order;
the test runs them against each other for every small (n, stages), under
fixed and seeded random interleavings.  Keep these generators in step with
the kernel when its hand-over changes.
"""
import pytest


def softmax_warpgroup(n, stages, alternate=True):
    """Warpgroup 0 of the ring before its producer loaded dense 16-bit tiles (until
    session 20; the producer's hand-over is modelled further down): S = Q K^T,
    softmax, O[:, :256] (QK^T and the softmax of tile j + 1 run while P V of tile j
    is on the tensor cores).  Kept with :func:`loader_warpgroup`: the checker's own
    tests below catch that design's past mistakes."""
    if n > 0:
        yield "sync", "tile_ready"                       # QK^T of tile 0
        yield "arrive", "p_ready"                        # softmax of tile 0
    for j in range(n):
        if j + 1 < n:
            yield "sync", "tile_ready"                   # QK^T of tile j+1, before P V(j)
        if j + 1 < n:
            yield "sync", "p_free"                       # warpgroup 1 read P(j)
            yield "arrive", "p_ready"                    # P(j+1)
        if j + stages < n:
            yield "arrive", ("buf_free", j % 2 if alternate else 0)   # P V(j) done: tile j's buffer may be refilled
    if n > 0:
        yield "sync", "p_free"                           # the last alpha was read
    yield "sync", "epilogue"


def loader_warpgroup(n, stages, alternate=True):
    """Warpgroup 1 of that ring: cp.async loads, O[:, 256:]; refills tile j-1's buffer in iteration j."""
    if n > 0:
        yield "arrive", "tile_ready"
    for j in range(n):
        yield "sync", "p_ready"
        yield "arrive", "p_free"
        if j + 1 < n:
            yield "arrive", "tile_ready"
        if j >= 1 and j - 1 + stages < n:
            yield "sync", ("buf_free", (j - 1) % 2 if alternate else 0)   # then load tile j-1 + stages
    yield "sync", "epilogue"


# Arrivals that complete a phase of each kind of mbarrier (each model section adds its own).
MBAR_PARTIES: dict = {}


def run(n, stages, warpgroups=(softmax_warpgroup, loader_warpgroup), random_orders=40):
    """'ok', or what went wrong: a deadlock, a warpgroup joining one barrier
    phase twice, or arrivals left pending at exit -- under alternating
    operations, each warpgroup running ahead as far as it can, and
    ``random_orders`` seeded random interleavings (a warpgroup may stall
    anywhere on the GPU: between two of its operations the other may run for
    as long as it likes)."""
    import random
    policies = [("alternate", None)] + [("lead", w) for w in range(len(warpgroups))]
    policies += [("random", random.Random(seed)) for seed in range(random_orders)]
    for policy in policies:
        result = _run_one(n, stages, warpgroups, policy)
        if result != "ok":
            return result
    return "ok"


def _run_one(n, stages, warpgroups, policy):
    """One interleaving.  A warpgroup yields ``(op, barrier)`` for named barriers
    ("sync" / "arrive", every warpgroup of the model a party) or ``(op,
    barrier, phase)`` for mbarriers ("marrive"; "mwait" for the phase by its
    parity, MBAR_PARTIES arrivals a phase)."""
    gens = [wg(n, stages) for wg in warpgroups]
    count = len(gens)
    done = [False] * count
    blocked = [None] * count             # ("bar", name, phase) or ("mbar", key, phase needed)
    phase, members = {}, {}              # named barriers: completed phases, who joined this one
    mphase, mcount = {}, {}              # mbarriers: completed phases, arrivals in this one
    parties = 2                          # a named barrier joins two warpgroups

    def free(w):
        b = blocked[w]
        if b is None:
            return True
        if b[0] == "bar":
            return phase.get(b[1], 0) != b[2]
        return mphase.get(b[1], 0) > b[2]

    last = count - 1
    while True:
        runnable = [w for w in range(count) if not done[w] and free(w)]
        if not runnable:
            break
        kind, arg = policy
        if kind == "alternate":
            w = next(x for x in [(last + k) % count for k in range(1, count + 1)] if x in runnable)
        elif kind == "lead":
            w = arg if arg in runnable else runnable[0]
        else:
            w = arg.choice(runnable)
        last = w
        blocked[w] = None
        try:
            op, bar, *need = next(gens[w])
        except StopIteration:
            done[w] = True
            continue
        if op in ("sync", "arrive"):
            joined = members.setdefault(bar, [])
            if w in joined:
                return f"warpgroup {w} joins {bar} phase {phase.get(bar, 0)} twice"
            joined.append(w)
            if len(joined) == parties:
                phase[bar] = phase.get(bar, 0) + 1
                members[bar] = []
            elif op == "sync":
                blocked[w] = ("bar", bar, phase.get(bar, 0))
        elif op == "marrive":
            mcount[bar] = mcount.get(bar, 0) + 1
            if mcount[bar] == MBAR_PARTIES[bar[0]]:
                mphase[bar] = mphase.get(bar, 0) + 1
                mcount[bar] = 0
        else:                                # mwait for phase `need` by its parity
            need = need[0]
            if mphase.get(bar, 0) > need + 1:
                return f"warpgroup {w} waits on {bar} phase {need}, lapped (phase {mphase[bar]})"
            if mphase.get(bar, 0) < need:    # phase need - 1 unfinished shows need's parity as done
                return f"warpgroup {w} waits on {bar} phase {need} ahead of unfinished phase {mphase.get(bar, 0)}"
            if mphase.get(bar, 0) <= need:
                blocked[w] = ("mbar", bar, need)
    if not all(done):
        return f"deadlock: {blocked}"
    pending = {b: m for b, m in members.items() if m}
    return f"pending arrivals at exit: {pending}" if pending else "ok"


@pytest.mark.parametrize("stages", [3, 4, 5])
def test_hand_over_neither_hangs_nor_leaves_arrivals(stages):
    assert {n: run(n, stages) for n in range(24)} == {n: "ok" for n in range(24)}


def test_the_model_catches_a_single_buffer_free_barrier():
    """One BUF_FREE barrier for every tile (the kernel until 2026-12-01): under
    some interleaving warpgroup 0 frees tile j + 1 before warpgroup 1 has synced
    for tile j, completing a phase alone.  On the H200 the tensor pipe's issue
    order made that window tiny; without TILE_READY each tile holding warpgroup
    0 back (a TMA variant that acquired tiles from their mbarriers,
    tools/results/2026-12-01_tma_acquire_by_warpgroup0.patch) it hung at once."""
    def wg0(n, stages):
        return softmax_warpgroup(n, stages, alternate=False)

    def wg1(n, stages):
        return loader_warpgroup(n, stages, alternate=False)
    assert "twice" in run(8, 4, (wg0, wg1))


def test_the_model_catches_two_arrivals_in_one_phase():
    """A warpgroup that publishes two tiles on one barrier before the other
    waits would complete a phase alone: a warpgroup running ahead exposes it."""
    def two_ahead(n, stages):
        yield "arrive", "tile_ready"
        yield "arrive", "tile_ready"
        yield "sync", "epilogue"

    def waits_twice(n, stages):
        yield "sync", "tile_ready"
        yield "sync", "tile_ready"
        yield "sync", "epilogue"
    assert "twice" in run(2, 4, (waits_twice, two_ahead))


def test_the_model_catches_the_deadlock_of_an_earlier_order():
    """An earlier pair (23caf1a): warpgroup 0 released tile j-1's buffer only
    after waiting for tile j+1, which warpgroup 1 published only after that
    release (hung on the H200)."""
    def late_release(n, stages):
        if n > 0:
            yield "sync", "tile_ready"
        for j in range(n):
            if j > 0:
                yield "sync", "p_free"
            yield "arrive", "p_ready"
            if j + 1 < n:
                yield "sync", "tile_ready"
            if j >= 1 and j - 1 + stages < n:
                yield "arrive", "buf_free"
        if n > 0:
            yield "sync", "p_free"
        yield "sync", "epilogue"

    def its_loader(n, stages):
        yield "arrive", "tile_ready"
        for j in range(n):
            yield "sync", "p_ready"
            yield "arrive", "p_free"
            if j + 1 < n:
                yield "arrive", "tile_ready"
            if j + stages < n:
                yield "sync", "buf_free"
        yield "sync", "epilogue"
    assert run(6, 4, (late_release, its_loader)).startswith("deadlock")
    assert run(3, 4, (late_release, its_loader)) == "ok"   # fewer tiles than buffers hides it


# ---- the seesaw schedule (kernels/hopper/mla_decode_seesaw.cu.j2; variants.Schedule.SEESAW) ----
# Two math warpgroups meet on named barriers (Q landed, the row maxima, the P
# hand-overs, the epilogue).  Tiles alternate between two buffers, a = 2t in buffer
# 0 (warpgroup 0 computes its S), b = 2t + 1 in buffer 1 (warpgroup 1); each buffer
# is loaded in two halves (L: chunks 0-3, warpgroup 0's V columns; R: chunks 4..,
# warpgroup 1's V and the rope, where P(a)' travels).  The loading warpgroup's warp
# (buffer k, half h) issues that half of every tile of buffer k, each after the
# half's previous tile was released on its empty mbarrier by its last reader; a
# half's issue is modelled as the arrival on its full mbarrier (TMA completes it
# once the boxes land).  Last readers: a's L warpgroup 0 (S(a), P(a) V_L(a)), a's
# R warpgroup 1 (P(a)' V_R(a), after warpgroup 0's S(a) through the P0 hand-over),
# b's L warpgroup 0 (P(b) V_L(b), after warpgroup 1's S(b) through P1), b's R
# warpgroup 1.  (Until session 20 the last reader refilled the half itself.)
MBAR_PARTIES.update({"sfull": 1, "sempty": 1})
L, R = 0, 1


def _seesaw_wait_tile(tile, halves, stages=2):
    for h in halves:
        yield "mwait", ("sfull", tile % stages, h), tile // stages


def _two_buffers(tile):
    return tile % 2


def _seesaw_pairs_wg0(n, wait, edges=False, after_s=lambda t: (), buf=_two_buffers, keep=lambda t: True):
    """Warpgroup 0's pairs over a job of n tiles; wait(t, halves) yields the waits
    for tile t, after_s(t) what follows S(t)'s retirement, buf(t) tile t's buffer;
    keep(t) false: tile t's release is not made in the pair (the caller makes it later)."""
    for pr in range((n + 1) // 2):
        ta, tb = 2 * pr, 2 * pr + 1
        yield "arrive", "m0"
        yield "sync", "m1"
        yield "arrive", "p0"
        if keep(ta):
            yield "marrive", ("sempty", buf(ta), L), None    # P(a) V_L(a) retired
        if tb < n:
            yield "sync", "p1"
        if ta + 2 < n:                                    # S(a + 2), chunks 0-3
            yield from wait(ta + 2, (L, R) if edges else (L,))
        if tb < n and keep(tb):
            yield "marrive", ("sempty", buf(tb), L), None   # P(b) V_L(b) retired
        if ta + 2 < n:
            if not edges:                                 # S(a + 2), chunks 4..
                yield from wait(ta + 2, (R,))
            yield from after_s(ta + 2)


def _seesaw_pairs_wg1(n, wait, after_s=lambda t: (), buf=_two_buffers, keep=lambda t: True):
    """Warpgroup 1's pairs (its S waits for the R half first: R_FIRST)."""
    for pr in range((n + 1) // 2):
        ta, tb = 2 * pr, 2 * pr + 1
        yield "sync", "m0"
        yield "arrive", "m1"
        if tb < n:
            yield "arrive", "p1"
        yield "sync", "p0"
        if tb < n and keep(tb):
            yield "marrive", ("sempty", buf(tb), R), None   # P(b) V_R(b) retired
        if keep(ta):
            yield "marrive", ("sempty", buf(ta), R), None    # P(a)' V_R(a) retired
        if tb + 2 < n:                                    # S(b + 2)
            yield from wait(tb + 2, (R, L))
            yield from after_s(tb + 2)


def seesaw_wg0(n, stages=2, edges=False):
    """Warpgroup 0: S, softmax and O[:, :256] of tiles a = 2t.  ``edges``: every
    tile is an edge tile, whose S first waits for both halves (zero_edges)."""
    yield "sync", "q"
    if n > 0:
        yield from _seesaw_wait_tile(0, (L, R), stages)
    yield from _seesaw_pairs_wg0(n, lambda t, halves: _seesaw_wait_tile(t, halves, stages), edges,
                                 buf=lambda t: t % stages)
    yield "sync", "epilogue"
    yield "sync", "epilogue"


def seesaw_wg1(n, stages=2, edges=False):
    """Warpgroup 1: S, softmax and O[:, 256:] of tiles b = 2t + 1 (its S waits for
    the R half first: R_FIRST)."""
    yield "sync", "q"
    if n > 1:
        yield from _seesaw_wait_tile(1, (R, L), stages)
    yield from _seesaw_pairs_wg1(n, lambda t, halves: _seesaw_wait_tile(t, halves, stages),
                                 buf=lambda t: t % stages)
    yield "sync", "epilogue"
    yield "sync", "epilogue"


def seesaw_loader(k, h, wait_for_empty=True):
    """The loading warp of half h of the tiles of parity k (with two buffers: buffer k's)."""
    def warp(n, stages=2):
        for tile in range(k, n, 2):
            if tile >= stages and wait_for_empty:
                yield "mwait", ("sempty", tile % stages, h), tile // stages - 1
            yield "marrive", ("sfull", tile % stages, h), None
    return warp


SEESAW_LOADERS = tuple(seesaw_loader(k, h) for k in (0, 1) for h in (L, R))


@pytest.mark.parametrize("stages", [2])
@pytest.mark.parametrize("edges", [False, True])
def test_seesaw_hand_over_neither_hangs_nor_laps(edges, stages):
    """Two 64-key buffers (the model also takes more: the buffer of a tile is its index
    modulo `stages`)."""
    def wg0(n, stages):
        return seesaw_wg0(n, stages, edges)

    def wg1(n, stages):
        return seesaw_wg1(n, stages, edges)
    got = {n: run(n, stages, (wg0, wg1) + SEESAW_LOADERS) for n in range(20)}
    assert got == {n: "ok" for n in range(20)}


def test_the_model_catches_a_seesaw_loader_that_does_not_wait_for_empty():
    """A loading warp that refills its half without the last reader's release
    completes the next full phase before the tile's reader waited: lapped."""
    eager = tuple(seesaw_loader(k, h, wait_for_empty=(k, h) != (0, R)) for k in (0, 1) for h in (L, R))
    assert "lapped" in run(12, 2, (seesaw_wg0, seesaw_wg1) + eager)


def test_the_model_catches_a_seesaw_release_nobody_makes():
    """Without warpgroup 1's release of a's R half the loader waits for ever."""
    def no_release_wg1(n, stages):
        for op in seesaw_wg1(n, stages):
            if op[:2] != ("marrive", ("sempty", 0, R)):
                yield op
    assert run(6, 2, (seesaw_wg0, no_release_wg1) + SEESAW_LOADERS).startswith("deadlock")


# ---- the seesaw's `_multicast` twin: two CTAs (a cluster) sharing every tile's copies ----
# Each CTA runs the seesaw's math warpgroups on its own named barriers.  A half's full
# mbarrier in CTA c completes once its loading warp armed it and both CTAs' copies of the
# half landed in c (each loading warp copies every other chunk into both CTAs: modelled as
# one arrival from each CTA's warp on both CTAs' barriers); its empty mbarrier once both
# CTAs' last readers released it (the peer's release arrives remotely).
MBAR_PARTIES.update({"cfull": 3, "cempty": 2})


def in_cluster(math_wg, cta):
    """A seesaw math warpgroup of CTA ``cta``: its named barriers the CTA's own, its waits on
    its CTA's full barriers, each release on both CTAs' empty barriers."""
    def warpgroup(n, stages=2):
        for op in math_wg(n, stages):
            if op[0] in ("sync", "arrive"):
                yield op[0], (cta, op[1])
            elif op[1][0] == "srec":                       # the CTA's own segment records
                yield op[0], ("srec", cta, op[1][1]), op[2]
            elif op[0] == "mwait":
                _, k, h = op[1]
                yield "mwait", ("cfull", cta, k, h), op[2]
            else:
                _, k, h = op[1]
                yield "marrive", ("cempty", cta, k, h), None
                yield "marrive", ("cempty", 1 - cta, k, h), None
    return warpgroup


def multicast_loader(cta, k, h, arm=True):
    """CTA ``cta``'s loading warp of half h of buffer k: once both CTAs released the half,
    it arms its own full barrier and copies its chunks into both CTAs."""
    def warp(n, stages=2):
        for tile in range(k, n, 2):
            yield from _multicast_tile(cta, tile, h, stages, arm)
    return warp


def _multicast_tile(cta, tile, h, stages=2, arm=True):
    """One tile of a multicast loading warp: the half's release by both CTAs, its own full
    barrier armed, its copies into both CTAs."""
    if tile >= stages:
        yield "mwait", ("cempty", cta, tile % stages, h), tile // stages - 1
    if arm:
        yield "marrive", ("cfull", cta, tile % stages, h), None
    for c in (0, 1):
        yield "marrive", ("cfull", c, tile % stages, h), None


def multicast_cluster(edges=False, loaders=None):
    math = tuple(in_cluster(lambda n, st, wg=wg: wg(n, st, edges=edges), c)
                 for c in (0, 1) for wg in (seesaw_wg0, seesaw_wg1))
    return math + (loaders or tuple(multicast_loader(c, k, h) for c in (0, 1) for k in (0, 1) for h in (L, R)))


@pytest.mark.parametrize("edges", [False, True])
def test_multicast_seesaw_cluster_neither_hangs_nor_laps(edges):
    got = {n: run(n, 2, multicast_cluster(edges), random_orders=20) for n in range(14)}
    assert got == {n: "ok" for n in range(14)}


def test_the_model_catches_a_multicast_release_that_stays_in_its_cta():
    """Releasing only its own CTA's empty barrier leaves the peer's loader (which copies into
    both CTAs) waiting for ever: the remote arrival is what lets it refill."""
    def local_only(math_wg, cta):
        def warpgroup(n, stages=2):
            for op in in_cluster(math_wg, cta)(n, stages):
                if op[0] == "marrive" and op[1][1] != cta:
                    continue
                yield op
        return warpgroup
    math = tuple(local_only(wg, c) for c in (0, 1) for wg in (seesaw_wg0, seesaw_wg1))
    loaders = tuple(multicast_loader(c, k, h) for c in (0, 1) for k in (0, 1) for h in (L, R))
    assert run(6, 2, math + loaders).startswith("deadlock")


def test_the_model_catches_a_multicast_loader_that_does_not_arm():
    """A loading warp that copies without arming its own CTA's full barrier never completes
    that barrier's phase: its CTA's math warpgroups wait for ever."""
    loaders = tuple(multicast_loader(c, k, h, arm=(c, k, h) != (1, 0, L)) for c in (0, 1) for k in (0, 1)
                    for h in (L, R))
    assert run(6, 2, multicast_cluster(loaders=loaders)).startswith("deadlock")


# ---- the `_segments` twin's hand-overs (mla_decode_seesaw.cu.j2, segment mode) ----
# A CTA (or a cluster) runs a share's segments back to back.  Tiles are numbered across the
# share and each segment starts on an even tile: one of an odd count ends on a phantom tile
# b, whose loading warps wait for its buffer and complete its phases with no bytes (an
# arrival, as a landed copy), and warpgroup 1 (the only one that waits on b's buffer) waits
# for those phases before either warpgroup frees the buffer: a parity wait one phase ahead
# of an unfinished one would pass at once, one two phases behind would wait on the wrong one.  The epilogue stages over the two tile buffers, so a
# segment's last pair (the phantom included) is released only after the staging has been
# read out: the loaders' empty waits then order the next segment's first copies after the
# epilogue.  The next segment's Q goes into Q's region (untouched by the staging) under the
# epilogue, and both math warpgroups meet on the Q barrier before their first S.  At the top
# of each segment warpgroup 0 publishes the next segment's record (or the one past the
# share) on its slot's mbarrier; the loading warps wait for it before that segment's tiles.

def _padded(n):
    """A segment's tile numbers: its count rounded up to even (the phantom)."""
    return n + (n & 1)


MBAR_PARTIES.update({"srec": 1})


def twin_segments_math(wg, seg_tiles, stages=2, phantom_wait=True, publish=True):
    """Math warpgroup ``wg`` (0: tiles a and the L halves; 1: tiles b, R halves) over the
    segments: the pairs with the last one's releases kept, then the epilogue, then those
    releases (the phantom's too)."""
    half = L if wg == 0 else R
    base = 0
    for k, n in enumerate(seg_tiles):
        last = _padded(n) - 2                              # the last pair's tile a
        yield "sync", "q"                                  # this segment's Q landed
        if wg == 0 and publish:                            # the next segment's record (or none)
            yield "marrive", ("srec", (k + 1) % 2), None
        first = 0 if wg == 0 else 1
        if n > first:
            yield from _seesaw_wait_tile(base + first, (L, R) if wg == 0 else (R, L), stages)
        wait = lambda t, halves, b=base: _seesaw_wait_tile(b + t, halves, stages)   # noqa: E731
        buf = lambda t, b=base: (b + t) % stages                                   # noqa: E731
        keep = lambda t, last=last: t < last                                       # noqa: E731
        if wg == 0:
            yield from _seesaw_pairs_wg0(n, wait, buf=buf, keep=keep)
        else:
            yield from _seesaw_pairs_wg1(n, wait, buf=buf, keep=keep)
        yield "sync", "epilogue"                           # row sums exchanged
        yield "sync", "epilogue"                           # every MMA retired: stage
        if wg == 1 and n & 1 and phantom_wait:             # the phantom's phases complete before
            yield from _seesaw_wait_tile(base + n, (R, L), stages)   # its buffer refills
        yield "sync", "epilogue"                           # the staging read out
        for t in (last, last + 1):
            yield "marrive", ("sempty", buf(t), half), None
        base += _padded(n)


def twin_segments_loader(k, h):
    """The loading warp of half h of the tiles of parity k, segment after segment (the
    phantom's arrival as a copy's)."""
    def warp(seg_tiles, stages=2):
        base = 0
        for s, n in enumerate(seg_tiles):
            if s > 0:                                      # segment s's record
                yield "mwait", ("srec", s % 2), (s - 1) // 2
            for tile in range(base + k, base + _padded(n), 2):
                if tile >= stages:
                    yield "mwait", ("sempty", tile % stages, h), tile // stages - 1
                yield "marrive", ("sfull", tile % stages, h), None
            base += _padded(n)
        s = len(seg_tiles)                                 # the record past the share
        yield "mwait", ("srec", s % 2), (s - 1) // 2
    return warp


def run_twin_segments(seg_tiles, cluster=False, random_orders=20, phantom_wait=True, publish=True):
    math = [lambda n, st, wg=wg: twin_segments_math(wg, seg_tiles, st, phantom_wait, publish) for wg in (0, 1)]
    loaders = [lambda n, st, f=twin_segments_loader(k, h): f(seg_tiles, st) for k in (0, 1) for h in (L, R)]
    if not cluster:
        return run(0, 2, tuple(math + loaders), random_orders=random_orders)
    in_cta = tuple(in_cluster(m, c) for c in (0, 1) for m in math)
    copies = tuple(lambda n, st, c=c, k=k, h=h: _cluster_copies(c, k, h, seg_tiles)
                   for c in (0, 1) for k in (0, 1) for h in (L, R))
    return run(0, 2, in_cta + copies, random_orders=random_orders)


def _cluster_copies(cta, k, h, seg_tiles):
    """A multicast loading warp over the share's segments, each after its CTA's record
    (a phantom modelled as a copy: both complete its phases, the kernel's with an arrival
    and no bytes in each CTA)."""
    base = 0
    for s, n in enumerate(seg_tiles):
        if s > 0:
            yield "mwait", ("srec", cta, s % 2), (s - 1) // 2
        for tile in range(base + k, base + _padded(n), 2):
            yield from _multicast_tile(cta, tile, h)
        base += _padded(n)
    s = len(seg_tiles)
    yield "mwait", ("srec", cta, s % 2), (s - 1) // 2


@pytest.mark.parametrize("cluster", [False, True])
def test_persistent_segments_neither_hang_nor_lap(cluster):
    """Segments of 1-5 tiles in every order of two and three (odd ones ending on a phantom
    tile), a run of one-tile segments, and long and short ones mixed, on one CTA and on
    the `_multicast` twin's cluster."""
    lists = _segment_lists()
    got = {tuple(t): run_twin_segments(t, cluster) for t in lists}
    assert got == {tuple(t): "ok" for t in lists}


def test_persistent_releases_cover_every_tile_once():
    """Deferring a segment's last releases to after the epilogue neither drops nor doubles
    one: each half of each tile number (a phantom's too) is released exactly once, by its
    own warpgroup."""
    for t in _segment_lists():
        ops = [op[1] for wg in (0, 1) for op in twin_segments_math(wg, t) if op[0] == "marrive"
               and op[1][0] == "sempty"]
        assert len(ops) == 2 * sum(_padded(n) for n in t), (t, len(ops))


def test_the_model_catches_a_segment_record_never_published():
    """The loading warps wait for each later segment's record (and the one past the share):
    unpublished, they wait for ever."""
    assert run_twin_segments([2, 3], publish=False).startswith("deadlock")
    assert run_twin_segments([2, 3], cluster=True, publish=False).startswith("deadlock")


def test_the_model_catches_a_phantom_tile_nobody_waits_for():
    """Without warpgroup 1's wait for an odd segment's phantom tile, its buffer may be
    refilled, or waited on a phase ahead, before the phantom's phases complete."""
    lists = [t for t in _segment_lists() if any(n & 1 for n in t)]
    assert any(run_twin_segments(t, phantom_wait=False) != "ok" for t in lists)


def test_the_model_catches_a_persistent_segment_that_never_releases_its_last_tiles():
    """Keeping a segment's last releases for after the epilogue and then not making them
    leaves the loaders waiting for ever on the next segment's first refills."""
    def math_without_late(wg, seg_tiles, stages=2):
        after_epilogue = 0
        for op in twin_segments_math(wg, seg_tiles, stages):
            if op == ("sync", "epilogue"):
                after_epilogue += 1
            elif op == ("sync", "q"):
                after_epilogue = 0
            if after_epilogue == 3 and op[0] == "marrive":
                continue
            yield op
    seg = [3, 3]
    math = [lambda n, st, wg=wg: math_without_late(wg, seg, st) for wg in (0, 1)]
    loaders = [lambda n, st, f=twin_segments_loader(k, h): f(seg, st) for k in (0, 1) for h in (L, R)]
    assert run(0, 2, tuple(math + loaders)).startswith("deadlock")


def _seesaw_rows(scores, values, tile):
    """The seesaw's online softmax for one row, step by step as the kernel does it
    (log2 units; tiles of `tile` keys in pairs a, b; -inf for masked keys):
    returns (O, m, l) with O normalised by l."""
    import numpy as np
    inf = float("inf")

    def use(m):
        return 0.0 if m == -inf else m

    n = len(scores)
    tiles = [(i, min(i + tile, n)) for i in range(0, n, tile)]
    o_l = np.zeros(values.shape[1] // 2)
    o_r = np.zeros(values.shape[1] // 2)
    half = values.shape[1] // 2
    m_run, l0, l1 = -inf, 0.0, 0.0
    for pr in range((len(tiles) + 1) // 2):
        a = tiles[2 * pr]
        b = tiles[2 * pr + 1] if 2 * pr + 1 < len(tiles) else None
        xa = scores[a[0]:a[1]]
        m0 = max(m_run, xa.max(initial=-inf))                 # warpgroup 0
        scale0 = 2.0 ** (use(m_run) - use(m0))
        pa = 2.0 ** (xa - use(m0))
        l0 = l0 * scale0 + pa.sum()
        o_l = o_l * scale0 + pa @ values[a[0]:a[1], :half]
        xb = scores[b[0]:b[1]] if b else np.array([])
        m1 = max(m0, xb.max(initial=-inf))                     # warpgroup 1
        f = 2.0 ** (use(m_run) - use(m0)) * 2.0 ** (use(m0) - use(m1))
        o_r, l1 = o_r * f, l1 * f
        if b:
            pb = 2.0 ** (xb - use(m1))
            l1 += pb.sum()
            o_r = o_r + pb @ values[b[0]:b[1], half:]
        pa1 = 2.0 ** (xa - use(m1))                            # P(a)' for O[:, 256:]
        o_r = o_r + pa1 @ values[a[0]:a[1], half:]
        scale1 = 2.0 ** (use(m0) - use(m1))                    # warpgroup 0 again
        o_l, l0 = o_l * scale1, l0 * scale1
        if b:
            o_l = o_l + pb @ values[b[0]:b[1], :half]
        m_run = m1
    l = l0 + l1
    o = np.concatenate([o_l, o_r]) / l if l > 0 else np.zeros(values.shape[1])
    return o, m_run, l


@pytest.mark.parametrize("tile", [32, 64])
@pytest.mark.parametrize("n", [1, 31, 32, 33, 64, 95, 96, 200])
def test_seesaw_softmax_bookkeeping_matches_a_plain_softmax(n, tile):
    """The rescaling of the seesaw (warpgroup 0 scales O[:, :256] by e^(m_prev-m0)
    then e^(m0-m1), warpgroup 1 O[:, 256:] by their product, P(a) recomputed
    against m1 for the other half, row sums kept per warpgroup) gives the plain
    softmax, with masked keys, rows masked for whole tiles and rows with nothing
    visible."""
    import numpy as np
    rng = np.random.default_rng(n)
    for trial in range(20):
        scores = rng.normal(0, 3, n) + (40 if trial % 5 == 0 else 0) * np.arange(n) / n
        values = rng.normal(0, 1, (n, 8))
        mask = rng.random(n) < (0.3 if trial % 3 else 0.95)
        if trial % 4 == 0:
            mask[: min(n, 40)] = True                          # whole leading tiles masked
        if trial == 7:
            mask[:] = True                                     # nothing visible
        x = np.where(mask, -np.inf, scores)
        o, m, l = _seesaw_rows(x, values, tile)
        if mask.all():
            assert l == 0 and (o == 0).all()
            continue
        w = np.exp2(x - x.max())
        ref = (w @ values) / w.sum()
        np.testing.assert_allclose(o, ref, rtol=1e-12, atol=1e-12)
        assert abs((m + np.log2(l)) - (x.max() + np.log2(w.sum()))) < 1e-12


# ---- the producer warpgroup of the sparse ring kernel (PRODUCER in mla_decode_wgmma.cu.j2) ----
# Three warpgroups: 0 and 1 meet on named barriers as above (P ready, P slot
# free, epilogue); the producer (2) hands tiles over on mbarriers: full[s]
# completes when the producer published the tile in buffer s (one party),
# empty[s] when both math warpgroups are done with it (two parties).  A wait
# names the phase it needs; an mbarrier is waited on by parity, so a waiter
# whose phase was overtaken by two (lapped) would read the wrong parity: the
# model reports it.

def producer_wg0(n, stages):
    """Warpgroup 0: QK^T(j + 1) waits for full, softmax(j + 1) hands P over,
    then empty(j) once its P V(j) retired."""
    if n > 0:
        yield "mwait", ("full", 0), 0
        yield "arrive", "p_ready", None
    for j in range(n):
        if j + 1 < n:
            yield "mwait", ("full", (j + 1) % stages), (j + 1) // stages
            yield "sync", "p_free", None
            yield "arrive", "p_ready", None
        yield "marrive", ("empty", j % stages), None
    if n > 0:
        yield "sync", "p_free", None
    yield "sync", "epilogue", None


def producer_wg1(n, stages):
    """Warpgroup 1: takes P(j), frees the slot, waits for tile j itself (an
    acquire of the producer's writes; the phase is complete by then), and
    empty(j) after its P V(j)."""
    for j in range(n):
        yield "sync", "p_ready", None
        yield "arrive", "p_free", None
        yield "mwait", ("full", j % stages), j // stages
        yield "marrive", ("empty", j % stages), None
    yield "sync", "epilogue", None


def producer_wg2(n, stages):
    """The producer: tile t into buffer t % stages once tile t - stages is free;
    tile t - 1 published after tile t's copies were issued; then it exits."""
    for t in range(n):
        if t >= stages:
            yield "mwait", ("empty", t % stages), t // stages - 1
        if t >= 1:
            yield "marrive", ("full", (t - 1) % stages), None
    if n > 0:
        yield "marrive", ("full", (n - 1) % stages), None


def producer_wg2_raw(n, stages):
    """The fp8_ds_mla producer: at the start of tile t it requests the raw bytes
    of tile t + 1 (an arrival on raw[s] standing for the bulk copies'
    completion) once buffer t + 1 is free, then dequantises tile t once its raw
    bytes landed, into the buffer they landed in, and publishes it."""
    if n > 0:
        yield "marrive", ("raw", 0), None
    for t in range(n):
        if t + 1 < n:
            if t + 1 >= stages:
                yield "mwait", ("empty", (t + 1) % stages), (t + 1) // stages - 1
            yield "marrive", ("raw", (t + 1) % stages), None
        yield "mwait", ("raw", t % stages), t // stages
        yield "marrive", ("full", t % stages), None


MBAR_PARTIES.update({"full": 1, "empty": 2, "raw": 1})


def run_producer(n, stages, warpgroups=(producer_wg0, producer_wg1, producer_wg2), random_orders=40):
    """:func:`run` with the producer kernel's three warpgroups by default."""
    return run(n, stages, warpgroups, random_orders)


@pytest.mark.parametrize("stages", [3, 4, 5])   # the kernel has 4 (static_assert NUM_STAGES >= 3)
def test_producer_hand_over_neither_hangs_nor_laps(stages):
    assert {n: run_producer(n, stages) for n in range(20)} == {n: "ok" for n in range(20)}


@pytest.mark.parametrize("stages", [3, 4, 5])   # the kernel has 4
def test_raw_producer_hand_over_neither_hangs_nor_laps(stages):
    warpgroups = (producer_wg0, producer_wg1, producer_wg2_raw)
    assert {n: run_producer(n, stages, warpgroups) for n in range(20)} == {n: "ok" for n in range(20)}


def test_the_model_shows_why_the_raw_producer_needs_three_buffers():
    """Requesting tile t + 1 at the start of tile t waits for tile t + 1 -
    stages freed, which warpgroup 0 does after QK^T(t + 2 - stages); with two
    buffers that is QK^T(t), and tile t is published after its request."""
    warpgroups = (producer_wg0, producer_wg1, producer_wg2_raw)
    assert run_producer(3, 2, warpgroups).startswith("deadlock")
    assert run_producer(3, 3, warpgroups) == "ok"


def test_the_model_shows_why_the_producer_needs_three_buffers():
    """The producer publishes tile t - 1 only after issuing tile t, which needs
    tile t - stages freed; warpgroup 0 frees tile j only after QK^T(j + 1).
    With two buffers tile 2 waits for tile 0, tile 0 for tile 1, tile 1 for tile 2."""
    assert run_producer(3, 2).startswith("deadlock")
    assert run_producer(2, 2) == "ok"


def test_the_model_catches_a_producer_that_does_not_wait_for_empty():
    """A producer refilling a buffer without waiting for both math warpgroups
    publishes tile t + stages over tile t: warpgroup 0's wait is lapped."""
    def eager_producer(n, stages):
        for t in range(n):
            yield "marrive", ("full", t % stages), None
    assert "lapped" in run_producer(8, 2, (producer_wg0, producer_wg1, eager_producer))


def test_the_model_catches_a_math_warpgroup_that_never_frees():
    """empty[s] counts both math warpgroups: without warpgroup 1's arrivals the
    producer waits for the first refill forever."""
    def wg1_never_frees(n, stages):
        for j in range(n):
            yield "sync", "p_ready", None
            yield "arrive", "p_free", None
        yield "sync", "epilogue", None
    assert run_producer(8, 2, (producer_wg0, wg1_never_frees, producer_wg2)).startswith("deadlock")


# ---- the ring's segment mode (mla_decode_wgmma.cu.j2, segment_ctas > 0) ----
# A CTA runs a share's segments back to back: tile t of a segment sits at ring place
# base + t (the tiles of the segments before it), the mbarrier phases running on; the
# producer publishes the last tile of a segment once the next one's first copies are
# issued; warpgroup 0's softmax of a tile at a ring place past 0 waits for warpgroup 1 to
# have read the last P (or, a segment's first tile, the last segment's row factors:
# warpgroup 1's extra arrival after it read them, when a segment follows).  Warpgroup 0's
# own barriers (the walk, the next Q) have one party and are not modelled.

def segments_wg0(seg_tiles, stages, p_free_at=lambda place, j: place > 0):
    base = 0
    for n in seg_tiles:
        if n > 0:
            yield "mwait", ("full", base % stages), base // stages
            if p_free_at(base, 0):
                yield "sync", "p_free", None
            yield "arrive", "p_ready", None
        for j in range(n):
            if j + 1 < n:
                g = base + j + 1
                yield "mwait", ("full", g % stages), g // stages
                if p_free_at(g, j + 1):
                    yield "sync", "p_free", None
                yield "arrive", "p_ready", None
            yield "marrive", ("empty", (base + j) % stages), None
        if n > 0:
            yield "sync", "p_free", None                  # the last alpha was read
        yield "sync", "epilogue", None
        base += n


def segments_wg1(seg_tiles, stages, frees_row_slot=True):
    base = 0
    for s, n in enumerate(seg_tiles):
        for j in range(n):
            yield "sync", "p_ready", None
            yield "arrive", "p_free", None
            yield "mwait", ("full", (base + j) % stages), (base + j) // stages
            yield "marrive", ("empty", (base + j) % stages), None
        base += n
        yield "sync", "epilogue", None
        if frees_row_slot and s + 1 < len(seg_tiles):
            yield "arrive", "p_free", None                # the row factors read: the slot is free


def segments_producer(seg_tiles, stages):
    pending = None
    g = 0
    for n in seg_tiles:
        for _ in range(n):
            if g >= stages:
                yield "mwait", ("empty", g % stages), g // stages - 1
            if pending is not None:
                yield "marrive", ("full", pending % stages), None
            pending = g
            g += 1
    if pending is not None:
        yield "marrive", ("full", pending % stages), None


def run_segments(seg_tiles, stages, wg0=segments_wg0, wg1=segments_wg1, producer=segments_producer):
    bound = [lambda n, st, f=f: f(seg_tiles, st) for f in (wg0, wg1, producer)]
    return run(0, stages, bound)


def _segment_lists():
    import itertools
    lists = [[n] for n in range(1, 8)]
    lists += [list(c) for k in (2, 3) for c in itertools.product([1, 2, 3, 5], repeat=k)]
    return lists + [[1] * 9, [4, 1, 1, 1, 6]]


@pytest.mark.parametrize("stages", [3, 4, 5])   # the kernel has 4
def test_ring_segments_neither_hang_nor_lap(stages):
    got = {tuple(t): run_segments(t, stages) for t in _segment_lists()}
    assert got == {tuple(t): "ok" for t in _segment_lists()}


def test_the_model_catches_a_segment_whose_row_factors_slot_is_never_freed():
    """Without warpgroup 1's arrival after reading the row factors, warpgroup 0's first
    P of the next segment waits on p_free for an arrival that never comes."""
    no_free = lambda t, st: segments_wg1(t, st, frees_row_slot=False)   # noqa: E731
    assert run_segments([2, 3], 4, wg1=no_free).startswith("deadlock")


def test_the_model_catches_a_first_p_that_does_not_wait_for_the_row_factors():
    """Warpgroup 0 waiting on p_free only for j > 0 (split mode's rule) in a later
    segment would leave warpgroup 1's extra arrival joining the next phase: it then
    joins p_free twice."""
    split_rule = lambda t, st: segments_wg0(t, st, p_free_at=lambda place, j: j > 0)   # noqa: E731
    assert run_segments([2, 3], 4, wg0=split_rule) != "ok"


# ---- the narrow kernel's ring of column-chunk slots (mla_decode_narrow.cu.j2) ----
# Two parties: warpgroup 0 (S^T, softmax, O^T) and the loading warp.  Chunk c of
# tile t sits at ring place t * chunks + c, in slot place % slots; full[slot]
# completes when its TMA boxes landed (the loader's arrival stands for them),
# empty[slot] when its last reader retired: the rope chunks after S^T, the V
# chunks after O^T, which warpgroup 0 queues and retires at the start of the next
# tile.  (No named barrier joins the two.)

def narrow_math(chunks, v_chunks):
    def math(n, slots):
        for j in range(n):
            if j >= 1:                                   # O^T(j - 1) retired: its V chunks
                for c in range(v_chunks):
                    yield "marrive", ("nempty", ((j - 1) * chunks + c) % slots), None
            for c in range(chunks):                      # S^T(j), a chunk at a time
                at = j * chunks + c
                yield "mwait", ("nfull", at % slots), at // slots
            for c in range(v_chunks, chunks):            # S^T(j) retired: its rope chunks
                yield "marrive", ("nempty", (j * chunks + c) % slots), None
    return math


def narrow_loader(chunks, empty="nempty"):
    """The loading warp; `empty`: the slots' empty barriers ("nempty2" with two math
    warpgroups, each of which must free a slot)."""
    def loader(n, slots):
        for t in range(n):
            for c in range(chunks):
                at = t * chunks + c
                if at >= slots:
                    yield "mwait", (empty, at % slots), at // slots - 1
                yield "marrive", ("nfull", at % slots), None
    return loader


MBAR_PARTIES.update({"nfull": 1, "nempty": 1})


@pytest.mark.parametrize("chunks, v_chunks", [(9, 8), (8, 8)])   # D_QK 576, 512
@pytest.mark.parametrize("slots", [18, 25, 31])                   # the kernel has 25 (>= 2 chunks)
def test_narrow_ring_neither_hangs_nor_laps(chunks, v_chunks, slots):
    warpgroups = (narrow_math(chunks, v_chunks), narrow_loader(chunks))
    assert {n: run(n, slots, warpgroups, 10) for n in range(12)} == {n: "ok" for n in range(12)}


def test_the_model_shows_how_many_slots_the_narrow_ring_needs():
    """Warpgroup 0 frees tile j - 1's V chunks before it waits for tile j, so the
    ring hangs only when it cannot hold one whole tile: 8 slots for 9 chunks wait
    for tile 0's first chunk, which O^T(0) frees after S^T(0) read the ninth.  (The
    kernel asserts 2 x 9 and has 25: what more slots buy is loads in flight.)"""
    warpgroups = (narrow_math(9, 8), narrow_loader(9))
    assert run(4, 8, warpgroups, 10).startswith("deadlock")
    assert run(4, 9, warpgroups, 10) == "ok"


def narrow_math_segments(chunks, v_chunks, seg_tiles, release_last=True, edges=(), empty="nempty"):
    """A math warpgroup in segment mode (split mode: one segment): each segment's tiles
    as narrow_math's, its ring places continuing the previous segment's; at a
    segment's end O^T of its last tile retires and frees that tile's V chunks
    (release_last).  Two math warpgroups (the 32-row tile over 16-bit caches): slots
    freed on `empty` = "nempty2", and the ring-wide tiles in `edges` zeroed by both
    together once each saw them land ("edge", the two math warpgroups its parties)."""
    def math(n, slots):
        base = 0
        for nt in seg_tiles:
            for j in range(nt):
                t = base + j
                if j >= 1:
                    for c in range(v_chunks):
                        yield "marrive", (empty, ((t - 1) * chunks + c) % slots), None
                if t in edges:
                    for c in range(chunks):
                        yield "mwait", ("nfull", (t * chunks + c) % slots), (t * chunks + c) // slots
                    yield "sync", "edge"
                for c in range(chunks):
                    at = t * chunks + c
                    yield "mwait", ("nfull", at % slots), at // slots
                for c in range(v_chunks, chunks):
                    yield "marrive", (empty, (t * chunks + c) % slots), None
            if release_last and nt and base + nt < sum(seg_tiles):
                for c in range(v_chunks):
                    yield "marrive", (empty, ((base + nt - 1) * chunks + c) % slots), None
            base += nt
    return math


SEGMENT_LISTS = [[3, 1, 4], [1] * 7, [5, 5], [2, 9, 1]]


@pytest.mark.parametrize("seg_tiles", SEGMENT_LISTS)
@pytest.mark.parametrize("slots", [18, 25])
def test_narrow_segments_neither_hang_nor_lap(seg_tiles, slots):
    warpgroups = (narrow_math_segments(9, 8, seg_tiles), narrow_loader(9))
    assert run(sum(seg_tiles), slots, warpgroups, 10) == "ok"


def test_the_model_catches_a_segment_that_keeps_its_last_tiles_slots():
    """Session 12's first segment-mode kernel freed a segment's last V chunks only
    at the next tile of the same segment, so the loader, a ring later, waited for
    them forever (the H200 run hung on 24 sequences; the small checks passed)."""
    warpgroups = (narrow_math_segments(9, 8, [1] * 7, release_last=False), narrow_loader(9))
    assert run(7, 25, warpgroups, 10).startswith("deadlock")


def test_the_model_catches_a_narrow_loader_that_does_not_wait_for_empty():
    def eager_loader(n, slots):
        for at in range(n * 9):
            yield "marrive", ("nfull", at % slots), None
    assert "lapped" in run(6, 18, (narrow_math(9, 8), eager_loader), 10)


# ---- the 32-row narrow kernel over 16-bit caches: two math warpgroups of 16 rows ----
# Both read every chunk, so a slot's empty barrier takes one arrival of each
# ("nempty2"); a tile with keys outside the split is zeroed by both together,
# after each saw it land, and neither reads it before both are past that
# barrier ("edge", the two math warpgroups its only parties): narrow_math_segments
# with edges and empty="nempty2".

MBAR_PARTIES.update({"nempty2": 2})


def segment_edges(seg_tiles):
    edges, base = set(), 0
    for nt in seg_tiles:
        if nt:
            edges |= {base, base + nt - 1}
        base += nt
    return edges


@pytest.mark.parametrize("seg_tiles", [[6]] + SEGMENT_LISTS)
@pytest.mark.parametrize("slots", [18, 23])   # the 32-row kernel has 23
def test_two_math_warpgroups_neither_hang_nor_lap(seg_tiles, slots):
    math = narrow_math_segments(9, 8, seg_tiles, edges=segment_edges(seg_tiles), empty="nempty2")
    warpgroups = (math, math, narrow_loader(9, "nempty2"))
    assert run(sum(seg_tiles), slots, warpgroups, 20) == "ok"


def test_the_model_catches_a_slot_freed_by_one_math_warpgroup():
    """With one arrival completing a slot's empty barrier, the warpgroup ahead frees
    the slot alone and the loader refills it under the one behind: lapped."""
    math = narrow_math_segments(9, 8, [6])
    assert "lapped" in run(6, 18, (math, math, narrow_loader(9)), 20)


# ---- a 32-row narrow design measured and dropped: alternate tiles ----
# (tools/results/next_narrow_alternate.patch, NOTES.md session 32: correct on the H200, not
# faster.)  Kept for the checker's test of a wait ahead of an unfinished phase, which
# out-of-order TMA completions over a ring shared by two readers in turn would make.
# Each math warpgroup holds all 32 rows and takes the tiles whose ring place has its
# parity; it alone waits for, zeroes and frees them ("nempty", one arrival), and the
# two meet only on named barriers: the segment's Q (both load it) and the merge of
# their rows at the segment's end (five: the rows' max and sum, two rounds of O^T
# chunks each way, the end).  The ring holds two tiles, one a warpgroup, so every use
# of a slot is one warpgroup's in order.

def narrow_alternate_math(w, chunks, v_chunks, seg_tiles, edges=()):
    def math(n, slots):
        base = 0
        for s, nt in enumerate(seg_tiles):
            yield "sync", "q"
            mine = [t for t in range(base, base + nt) if t % 2 == w]
            for k, t in enumerate(mine):
                if k >= 1:                               # O^T of its previous tile retired
                    for c in range(v_chunks):
                        yield "marrive", ("nempty", (mine[k - 1] * chunks + c) % slots), None
                if t in edges:                           # zeroed by this warpgroup alone
                    for c in range(chunks):
                        yield "mwait", ("nfull", (t * chunks + c) % slots), (t * chunks + c) // slots
                for c in range(chunks):
                    at = t * chunks + c
                    yield "mwait", ("nfull", at % slots), at // slots
                for c in range(v_chunks, chunks):
                    yield "marrive", ("nempty", (t * chunks + c) % slots), None
            if mine and s + 1 < len(seg_tiles):          # the segment's last: freed for the next one
                for c in range(v_chunks):
                    yield "marrive", ("nempty", (mine[-1] * chunks + c) % slots), None
            for _ in range(5):
                yield "sync", "merge"
            base += nt
    return math


@pytest.mark.parametrize("chunks, v_chunks", [(9, 8), (8, 8)])   # D_QK 576, 512
@pytest.mark.parametrize("seg_tiles", [[6], [1], [7]] + SEGMENT_LISTS)
def test_alternate_tiles_neither_hang_nor_lap(chunks, v_chunks, seg_tiles):
    edges = segment_edges(seg_tiles)
    warpgroups = (narrow_alternate_math(0, chunks, v_chunks, seg_tiles, edges),
                  narrow_alternate_math(1, chunks, v_chunks, seg_tiles, edges), narrow_loader(chunks))
    assert run(sum(seg_tiles), 2 * chunks, warpgroups, 20) == "ok"


def narrow_loader_landing_out_of_order(chunks):
    """The loading warp with the copies of each pair of tiles landing in reverse order
    (TMA completions are unordered): tile t + 1's chunks complete before tile t's."""
    def loader(n, slots):
        for t0 in range(0, n, 2):
            tiles = [t for t in (t0, t0 + 1) if t < n]
            for t in tiles:
                for c in range(chunks):
                    at = t * chunks + c
                    if at >= slots:
                        yield "mwait", ("nempty", at % slots), at // slots - 1
            for t in reversed(tiles):
                for c in range(chunks):
                    yield "marrive", ("nfull", (t * chunks + c) % slots), None
    return loader


@pytest.mark.parametrize("chunks, v_chunks", [(9, 8), (8, 8)])
def test_alternate_tiles_landing_out_of_order(chunks, v_chunks):
    warpgroups = (narrow_alternate_math(0, chunks, v_chunks, [9]), narrow_alternate_math(1, chunks, v_chunks, [9]),
                  narrow_loader_landing_out_of_order(chunks))
    assert run(9, 2 * chunks, warpgroups, 20) == "ok"


def test_the_model_catches_alternate_tiles_over_a_ring_of_other_sizes():
    """A ring of 23 slots (the row split's) under alternate tiles: a slot's uses fall to
    both warpgroups in turn, and with copies landing out of order the one whose tile
    comes later can wait for its phase while the other's, the phase before, is still
    unfinished -- the parity then reads as done (the kernel asserts SLOTS == 2 CHUNKS)."""
    warpgroups = (narrow_alternate_math(0, 9, 8, [8]), narrow_alternate_math(1, 9, 8, [8]),
                  narrow_loader_landing_out_of_order(9))
    assert "ahead of unfinished" in run(8, 23, warpgroups, 20)


# ---- the 16-row RS kernels over fp8 records: a ring of raw tiles (mla_decode_narrow.cu.j2) ----
# Two copying warps copy tile t into raw tile t % raw_tiles once its last reader freed it
# (rempty) and publish it (rfull: both warps' arrivals and the bytes).  The math warpgroups
# take alternate tiles (render.narrow_alternate: warpgroup w the tiles t % 2 == w); each
# waits for its tile, frees it after the tile's O^T (at the start of its next tile, or at
# its end: rs_ot's arrival), and meets the other on named barriers only twice: Q (both
# load it) and the merge (warpgroup 1 arrives once its (m, l, O^T) are written, warpgroup 0
# syncs before reading them).  One math warpgroup (turns=1) is the kernel before them.
MBAR_PARTIES.update({"rfull": 2, "rempty": 1})


def narrow_rs_math(w, turns):
    def math(n, raw_tiles):
        if turns > 1:
            yield "sync", "q"
        mine = [t for t in range(n) if t % turns == w]
        for k, t in enumerate(mine):
            if k >= 1:                                   # O^T of its previous tile: freed
                yield "marrive", ("rempty", mine[k - 1] % raw_tiles), None
            yield "mwait", ("rfull", t % raw_tiles), t // raw_tiles
        if mine:
            yield "marrive", ("rempty", mine[-1] % raw_tiles), None
        if turns > 1:
            yield ("arrive" if w else "sync"), "merge"
    return math


def narrow_rs_copier(n, raw_tiles):
    for t in range(n):
        if t >= raw_tiles:
            yield "mwait", ("rempty", t % raw_tiles), t // raw_tiles - 1
        yield "marrive", ("rfull", t % raw_tiles), None


@pytest.mark.parametrize("raw_tiles", [2, 3, 4, 5])   # the kernels have 4 (fp8_ds_mla) and 5 (fp8)
@pytest.mark.parametrize("turns", [1, 2])
def test_narrow_rs_ring_neither_hangs_nor_laps(raw_tiles, turns):
    warpgroups = tuple(narrow_rs_math(w, turns) for w in range(turns)) + (narrow_rs_copier, narrow_rs_copier)
    assert {n: run(n, raw_tiles, warpgroups, 10) for n in range(14)} == {n: "ok" for n in range(14)}


def narrow_rs_copier_landing_out_of_order(window):
    """The copying warps with each group of `window` tiles' bytes landing in reverse order
    (bulk copies complete out of order; a tile's 64 copies, the last of which publishes it)."""
    def copier(n, raw_tiles):
        for t0 in range(0, n, window):
            tiles = [t for t in range(t0, t0 + window) if t < n]
            for t in tiles:
                if t >= raw_tiles:
                    yield "mwait", ("rempty", t % raw_tiles), t // raw_tiles - 1
            for t in reversed(tiles):
                yield "marrive", ("rfull", t % raw_tiles), None
    return copier


def _rs_alternate_landing_out_of_order(window):
    copier = narrow_rs_copier_landing_out_of_order(window)
    return narrow_rs_math(0, 2), narrow_rs_math(1, 2), copier, copier


@pytest.mark.parametrize("raw_tiles, window", [(2, 2), (4, 2), (4, 4), (6, 2), (6, 4)])   # (no more in flight than the ring holds)
def test_narrow_rs_alternate_tiles_landing_out_of_order(raw_tiles, window):
    """An even ring (render.hopper_tile keeps it even under narrow_alternate): each raw tile
    is one warpgroup's, whose own order keeps its waits phase after phase."""
    warpgroups = _rs_alternate_landing_out_of_order(window)
    assert {n: run(n, raw_tiles, warpgroups, 20) for n in range(16)} == {n: "ok" for n in range(16)}


@pytest.mark.parametrize("raw_tiles, window", [(3, 2), (5, 4)])
def test_the_model_catches_alternate_tiles_over_an_odd_raw_ring(raw_tiles, window):
    """An odd ring (fp8's five raw tiles, before the ring was kept even): a raw tile's uses
    fall to both warpgroups in turn, and with copies landing out of order one can wait for
    its tile's phase while the other's tile, the phase before, has not landed -- the parity
    then reads as done.  (On an H100 the nomath ablation of the five-tile fp8 kernel, whose
    warpgroups run through their tiles, ended in a launch failure: CTAs exiting with copies
    in flight; the four-tile fp8_ds_mla one did not.  NOTES.md session 44.)"""
    warpgroups = _rs_alternate_landing_out_of_order(window)
    assert any("ahead of unfinished" in run(n, raw_tiles, warpgroups, 20) for n in range(16))


def test_the_model_catches_an_rs_warpgroup_that_keeps_a_tile():
    """A math warpgroup that never frees its first tile: the copier's wait for that raw
    tile, raw_tiles tiles later, never completes (a hang on the GPU)."""
    def keeps_first(w, turns):
        def math(n, raw_tiles):
            ops = list(narrow_rs_math(w, turns)(n, raw_tiles))
            first_release = next(k for k, op in enumerate(ops) if op[0] == "marrive")
            yield from ops[:first_release] + ops[first_release + 1:]
        return math
    warpgroups = (keeps_first(0, 2), narrow_rs_math(1, 2), narrow_rs_copier, narrow_rs_copier)
    assert run(8, 4, warpgroups, 10).startswith("deadlock")
    assert run(4, 4, warpgroups, 10) == "ok"   # (no tile comes round to it)


@pytest.mark.parametrize("raw_tiles", [2, 3, 4, 5])
def test_narrow_rs_merge_tile_is_free(raw_tiles):
    """The merge writes warpgroup 1's O^T into the raw tile of its last tile (tile 1 when it
    had none: num_tiles <= 1), the kernel's `last1`: no later tile is copied into it and
    warpgroup 0 reads no tile there after it (its earlier ones there were freed before
    tile last1 was copied in, the ring's order)."""
    for n in range(40):
        last1 = ((n - 2) | 1) if n >= 2 else 1
        assert n < 2 or (last1 < n and last1 % 2 == 1 and last1 + 2 >= n), n   # warpgroup 1's last
        assert not [t for t in range(last1 + 1, n) if t % raw_tiles == last1 % raw_tiles], (n, last1)
        assert n >= 2 or not [t for t in range(n) if t % raw_tiles == 1], n


# ---- the pair schedule: two CTAs of a cluster (mla_decode_pair.cu.j2) ----
# Six warpgroups: each CTA's producer, warpgroup 0 and warpgroup 1.  Tile j sits in
# buffer j % 2 of both CTAs.  pfull_local[c, s] completes on CTA c's producer's
# arrival; pfull_remote[c, s] on CTA c's producer's expect-tx arrival and the peer's
# st.async bytes (one arrival here, made once the peer wrote them); pempty[c, s] on
# one arrival of each math warpgroup of both CTAs.  P_READY alternates two named
# barriers by tile parity (both warpgroups of one CTA).
MBAR_PARTIES.update({"pfull_local": 1, "pfull_remote": 2, "pempty": 4})


def pair_producer(c, wait_for_empty=True, jobs=None):
    """``jobs``: a persistent CTA's tile counts (None: one job of the run's n); the
    producer walks them as one stream of tiles g (buffer g % 2, phase g // 2)."""
    def producer(n, stages):
        for t in range(sum(jobs) if jobs is not None else n):
            if t >= stages and wait_for_empty:
                yield "mwait", ("pempty", c, t % stages), t // stages - 1
            yield "marrive", ("pfull_remote", c, t % stages), None       # its own expect-tx
            yield "marrive", ("pfull_remote", 1 - c, t % stages), None   # its half in the peer
            yield "marrive", ("pfull_local", c, t % stages), None
    return producer


def pair_wg0(c, parity_barriers=True, jobs=None):
    def wg0(n, stages):
        g = 0
        for tiles in jobs if jobs is not None else (n,):
            for _ in range(tiles):
                yield "mwait", ("pfull_local", c, g % stages), g // stages
                yield "mwait", ("pfull_remote", c, g % stages), g // stages
                yield "arrive", ("p_ready", c, g % 2 if parity_barriers else 0), None   # P(g) after S(g)
                yield "marrive", ("pempty", c, g % stages), None                      # P V(g) retired
                yield "marrive", ("pempty", 1 - c, g % stages), None
                g += 1
            yield "sync", ("pepilogue", c), None
            yield "sync", ("pepilogue", c), None
    return wg0


def pair_wg1(c, parity_barriers=True, jobs=None):
    def wg1(n, stages):
        g = 0
        for tiles in jobs if jobs is not None else (n,):
            for _ in range(tiles):
                yield "sync", ("p_ready", c, g % 2 if parity_barriers else 0), None
                yield "mwait", ("pfull_local", c, g % stages), g // stages
                yield "mwait", ("pfull_remote", c, g % stages), g // stages
                yield "marrive", ("pempty", c, g % stages), None
                yield "marrive", ("pempty", 1 - c, g % stages), None
                g += 1
            yield "sync", ("pepilogue", c), None
            yield "sync", ("pepilogue", c), None
    return wg1


def pair_warpgroups(jobs=None, **kw):
    return tuple(f(c, jobs=jobs, **kw) if f is not pair_producer else f(c, jobs=jobs) for c in (0, 1)
                 for f in (pair_producer, pair_wg0, pair_wg1))


def test_pair_hand_over_neither_hangs_nor_laps():
    assert {n: run(n, 2, pair_warpgroups()) for n in range(20)} == {n: "ok" for n in range(20)}


def test_persistent_pair_jobs_neither_hang_nor_lap():
    """A persistent CTA's jobs (session 23): every list of one to three jobs of 0-4
    tiles, buffers, phases and P_READY parity by the running tile count, each job
    closed by the two epilogue barriers of both math warpgroups."""
    import itertools
    bad = {}
    for count in (1, 2, 3):
        for jobs in itertools.product(range(5), repeat=count):
            got = run(0, 2, pair_warpgroups(jobs=jobs), random_orders=10)
            if got != "ok":
                bad[jobs] = got
    assert bad == {}


def test_the_model_catches_persistent_jobs_that_restart_the_phases():
    """Counting each job's tiles from 0 for the buffers and phases (as if every job
    were a fresh CTA) breaks after a job with an odd tile count: the buffers' use
    counts have parted."""
    def restarting(c, role):
        def wg(n, stages):
            for tiles in (1, 2):
                for g in range(tiles):   # g restarts: the bug
                    if role == "producer":
                        if g >= stages:
                            yield "mwait", ("pempty", c, g % stages), g // stages - 1
                        yield "marrive", ("pfull_remote", c, g % stages), None
                        yield "marrive", ("pfull_remote", 1 - c, g % stages), None
                        yield "marrive", ("pfull_local", c, g % stages), None
                        continue
                    if role == "wg1":
                        yield "sync", ("p_ready", c, g % 2), None
                    yield "mwait", ("pfull_local", c, g % stages), g // stages
                    yield "mwait", ("pfull_remote", c, g % stages), g // stages
                    if role == "wg0":
                        yield "arrive", ("p_ready", c, g % 2), None
                    yield "marrive", ("pempty", c, g % stages), None
                    yield "marrive", ("pempty", 1 - c, g % stages), None
                if role != "producer":
                    yield "sync", ("pepilogue", c), None
                    yield "sync", ("pepilogue", c), None
        return wg
    wgs = tuple(restarting(c, r) for c in (0, 1) for r in ("producer", "wg0", "wg1"))
    assert run(0, 2, wgs, random_orders=10) != "ok"


def test_the_model_catches_a_pair_producer_that_does_not_wait_for_empty():
    """Refilling a buffer before both CTAs' math warpgroups released it publishes
    tile t + 2 over tile t: a math warpgroup's full wait is lapped."""
    wgs = list(pair_warpgroups())
    wgs[0] = pair_producer(0, wait_for_empty=False)
    assert "lapped" in run(8, 2, tuple(wgs)) or "twice" in run(8, 2, tuple(wgs))


def test_the_model_shows_why_p_ready_alternates_by_tile_parity():
    """One P_READY barrier: warpgroup 0 publishes P(j + 1) before warpgroup 1 synced
    for P(j), and its second arrival joins the phase warpgroup 1 has not."""
    assert "twice" in run(6, 2, pair_warpgroups(parity_barriers=False))


# ---- the persistent seesaw (designed, not built: tools/results/NOTES.md sessions 20-21) ----
# A CTA runs several jobs (row tile, split, sequence) in turn.  Tile t of a job sits in
# buffer t % 2 (a tiles in buffer 0), and is the u-th use of its buffer counting every
# earlier job's tiles, so a full / empty phase is a use count, not a tile index (a job
# with an odd tile count leaves buffer 1 a use behind).  Q is loaded by the loading warp
# of buffer 0's L half between its tiles of two jobs, after both math warpgroups' last S
# of the earlier job (q_empty, two parties) and before their first S of the next (q_full,
# one party).  A third epilogue barrier keeps warpgroup 1 from writing the next job's
# P(b) into sP1 while warpgroup 0 still reads the row sums there.  The model checks
# phases only: that Q and sP1 are not overwritten while still read are data orders
# (q_empty after each warpgroup's last S; the third barrier) it states but cannot test.
MBAR_PARTIES.update({"qfull": 1, "qempty": 2})


def _job_uses(jobs):
    """(buffer, use index) of each tile of each job, uses counted across jobs."""
    counts, out = [0, 0], []
    for n in jobs:
        tiles = []
        for t in range(n):
            tiles.append((t % 2, counts[t % 2]))
            counts[t % 2] += 1
        out.append(tiles)
    return out


def _wait_use(use, halves):
    k, u = use
    for h in halves:
        yield "mwait", ("sfull", k, h), u


def persistent_wg0(jobs, epilogue_syncs=3, uses=_job_uses):
    def wg0(n, stages):
        for j, tiles in enumerate(uses(jobs)):
            n = len(tiles)
            last_a = (n - 1) // 2 * 2 if n else -1
            yield "mwait", ("qfull",), j
            if n > 0:
                yield from _wait_use(tiles[0], (L, R))
            if last_a <= 0:
                yield "marrive", ("qempty",), None           # its last S (or none) retired
            yield from _seesaw_pairs_wg0(
                n, lambda t, halves: _wait_use(tiles[t], halves),
                after_s=lambda t: [("marrive", ("qempty",), None)] if t == last_a else [])
            for _ in range(epilogue_syncs):
                yield "sync", "epilogue"
    return wg0


def persistent_wg1(jobs, epilogue_syncs=3, uses=_job_uses):
    def wg1(n, stages):
        for j, tiles in enumerate(uses(jobs)):
            n = len(tiles)
            last_b = (n - 2) // 2 * 2 + 1 if n > 1 else -1
            yield "mwait", ("qfull",), j
            if n > 1:
                yield from _wait_use(tiles[1], (R, L))
            if last_b <= 1:
                yield "marrive", ("qempty",), None
            yield from _seesaw_pairs_wg1(
                n, lambda t, halves: _wait_use(tiles[t], halves),
                after_s=lambda t: [("marrive", ("qempty",), None)] if t == last_b else [])
            for _ in range(epilogue_syncs):
                yield "sync", "epilogue"
    return wg1


def persistent_loader(jobs, k, h, q_wait=True, wait_for_empty=True):
    """The loading warp of buffer k's half h; warp (0, L) also loads each job's Q."""
    def warp(n, stages):
        for j, tiles in enumerate(_job_uses(jobs)):
            if (k, h) == (0, L):
                if j > 0 and q_wait:
                    yield "mwait", ("qempty",), j - 1
                yield "marrive", ("qfull",), None
            for buf, u in tiles:
                if buf != k:
                    continue
                if u >= 1 and wait_for_empty:
                    yield "mwait", ("sempty", k, h), u - 1
                yield "marrive", ("sfull", k, h), None
    return warp


def persistent_warpgroups(jobs, **kw):
    return ((persistent_wg0(jobs, **kw), persistent_wg1(jobs, **kw))
            + tuple(persistent_loader(jobs, k, h) for k in (0, 1) for h in (L, R)))


def test_persistent_seesaw_hand_over_neither_hangs_nor_laps():
    """Every list of one to three jobs of 0-5 tiles (odd counts shift the buffers' use
    counts apart), under the fixed and ten seeded random interleavings."""
    import itertools
    bad = {}
    for count in (1, 2, 3):
        for jobs in itertools.product(range(6), repeat=count):
            got = run(0, 2, persistent_warpgroups(jobs), random_orders=10)
            if got != "ok":
                bad[jobs] = got
    assert bad == {}


def test_the_model_needs_per_buffer_use_counts():
    """The math warpgroups counting phases by tile index from each job's start (as the
    one-job kernel does) against loaders counting uses: after a job with an odd tile
    count buffer 1's phases and theirs part, and a wait is lapped or never completes."""
    def restarted(jobs):
        return [[(t % 2, t // 2) for t in range(n)] for n in jobs]
    jobs = (3, 2, 2)
    wgs = (persistent_wg0(jobs, uses=restarted), persistent_wg1(jobs, uses=restarted)) \
        + persistent_warpgroups(jobs)[2:]
    got = run(0, 2, wgs, random_orders=5)
    assert "lapped" in got or got.startswith("deadlock"), got
    assert run(0, 2, persistent_warpgroups(jobs)) == "ok"


def test_the_model_catches_a_persistent_loader_that_does_not_wait_for_empty():
    """Refilling buffer 1's R half without its last reader's release, across jobs."""
    jobs = (3, 4, 2)
    wgs = persistent_warpgroups(jobs)[:5] + (persistent_loader(jobs, 1, R, wait_for_empty=False),)
    assert "lapped" in run(0, 2, wgs)


# ---- the narrow kernel over fp8 records (render.narrow_rs) ----
# No producer decodes them: two copying warps (a key a thread) bring each tile's records
# into a ring of RAW_TILES raw tiles, announced on the tile's full mbarrier ("rfull": both
# warps' arrivals, the bytes modelled as landed with them; sparse: the tokens that see each
# key are written before the arrival).  Each math warpgroup waits for tile j before S^T(j)
# and frees it once O^T(j)'s fragments are in registers (iteration j + 1, before it waits
# for tile j + 1; the last tile after the loop), one arrival a warp ("rempty1": four, "rempty2":
# eight for two math warpgroups that both read every tile, render.narrow_features).  A copying warp refills raw tile t % RAW_TILES only once
# that barrier's phase for tile t - RAW_TILES completed.

MBAR_PARTIES.update({"rfull": 2, "rfull1": 1, "rempty1": 4, "rempty2": 8})


def rs_math(empty, raw_tiles):
    def math(n, _):
        for j in range(n + 1):
            if j >= 1:                                   # O^T(j - 1)'s fragments loaded
                for _warp in range(4):
                    yield "marrive", (empty, (j - 1) % raw_tiles), None
            if j < n:
                yield "mwait", ("rfull", j % raw_tiles), j // raw_tiles   # S^T(j)
    return math


def rs_copier(empty, raw_tiles, waits=True):
    def warp(n, _):
        for t in range(n):
            if t >= raw_tiles and waits:
                yield "mwait", (empty, t % raw_tiles), t // raw_tiles - 1
            yield "marrive", ("rfull", t % raw_tiles), None
    return warp


def rs_warps(consumers, raw_tiles, empty=None, waits=True):
    empty = empty or f"rempty{consumers}"
    return (rs_math(empty, raw_tiles),) * consumers + (rs_copier(empty, raw_tiles, waits),) * 2


@pytest.mark.parametrize("consumers", [1, 2])   # 2: the 32-row kernels, both warpgroups on every tile
@pytest.mark.parametrize("raw_tiles", [2, 3, 4, 5])               # 32 rows: 3 (fp8_ds_mla), 4 (fp8)
def test_narrow_raw_tile_ring_neither_hangs_nor_laps(consumers, raw_tiles):
    """(render.narrow_features: every warpgroup waits for every tile in order, so the ring
    need not be even, as alternate tiles need; the two also meet on named barriers twice a
    tile, the exchange and P^T's, which order them further.)"""
    warps = rs_warps(consumers, raw_tiles)
    assert {n: run(n, raw_tiles, warps, 20) for n in range(14)} == {n: "ok" for n in range(14)}


def rs_features_math(raw_tiles):
    """A math warpgroup of the 32-row RS kernel (render.narrow_features): per tile, O^T(j - 1)'s
    fragments loaded (four arrivals on the raw tile's empty barrier, of eight), S^T(j) after the
    tile landed, then the two warpgroups' named barriers: the partial S^T exchanged (BAR_XCH),
    each one's rows of P^T and their factors written (BAR_P); after the loop the last O^T's
    arrivals, and the epilogue's exchange of the rows' output factors (BAR_EDGE)."""
    def math(n, _):
        for j in range(n + 1):
            if j >= 1:
                for _warp in range(4):
                    yield "marrive", ("rempty2", (j - 1) % raw_tiles), None
            if j < n:
                yield "mwait", ("rfull", j % raw_tiles), j // raw_tiles
                yield "sync", "xch"
                yield "sync", "p"
        yield "sync", "fins"
    return math


@pytest.mark.parametrize("raw_tiles", [3, 4])    # fp8_ds_mla, fp8
def test_the_32_row_kernels_tiles_and_named_barriers_neither_hang_nor_lap(raw_tiles):
    """The two math warpgroups meet twice a tile on named barriers (the exchange, P^T) and once
    in the epilogue, while the copying warps refill each raw tile once both freed it."""
    warps = (rs_features_math(raw_tiles),) * 2 + (rs_copier("rempty2", raw_tiles),) * 2
    assert {n: run(n, raw_tiles, warps, 20) for n in range(14)} == {n: "ok" for n in range(14)}


def test_the_model_catches_a_warpgroup_that_skips_the_exchange():
    """One math warpgroup leaving out a tile's exchange leaves the other waiting (or joining
    P^T's barrier a phase off): the model must not call that ok."""
    def skipping(n, raw_tiles):
        exchanges = 0
        for op in rs_features_math(raw_tiles)(n, raw_tiles):
            exchanges += op == ("sync", "xch")
            if op == ("sync", "xch") and exchanges == 2:
                continue
            yield op
    warps = (rs_features_math(4), skipping) + (rs_copier("rempty2", 4),) * 2
    assert run(5, 4, warps, 0) != "ok"


def tma_copier(empty, raw_tiles):
    """render.narrow_tma_raw's loading warp: one arrival a tile (its lane 0's, with the bytes),
    after the raw tile's empty barrier as the copying warps."""
    def warp(n, _):
        for t in range(n):
            if t >= raw_tiles:
                yield "mwait", (empty, t % raw_tiles), t // raw_tiles - 1
            yield "marrive", ("rfull1", t % raw_tiles), None
    return warp


def tma_math(empty, raw_tiles):
    def math(n, stages):
        for op in rs_math(empty, raw_tiles)(n, stages):
            yield (op[0], ("rfull1", op[1][1]), op[2]) if op[1][0] == "rfull" else op
    return math


@pytest.mark.parametrize("consumers", [1, 2])
@pytest.mark.parametrize("raw_tiles", [2, 3, 4, 5])
def test_the_tma_loaded_raw_tile_ring_neither_hangs_nor_laps(consumers, raw_tiles):
    """Dense `fp8` rows by TMA (render.narrow_tma_raw): one loading warp's arrival a tile."""
    warps = (tma_math(f"rempty{consumers}", raw_tiles),) * consumers + (tma_copier(f"rempty{consumers}", raw_tiles),)
    assert {n: run(n, raw_tiles, warps, 20) for n in range(14)} == {n: "ok" for n in range(14)}


def test_the_model_catches_a_copying_warp_that_does_not_wait_for_empty():
    assert "lapped" in run(9, 4, rs_warps(1, 4, waits=False), 20)


def test_the_model_catches_a_raw_tile_freed_by_fewer_warps_than_its_barrier_counts():
    """The math frees a raw tile with one arrival a warp; a barrier that counted
    eight (two math warpgroups' warps) under one math warpgroup never completes."""
    assert run(9, 4, rs_warps(1, 4, empty="rempty2"), 20).startswith("deadlock")
