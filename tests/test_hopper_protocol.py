"""The named-barrier hand-over of the Hopper decode kernel, modelled on the CPU.

kernels/hopper/mla_decode_wgmma.cu.j2 runs two warpgroups that meet on named
barriers (bar.arrive / bar.sync with both warpgroups counted).  A schedule in
which one side waits for an arrival the other only makes after waiting itself
hangs the GPU, and an arrival nobody syncs on leaves a barrier mid-phase at
exit.  Each warpgroup below is the kernel's sequence of barrier operations for
a CTA of ``n`` key tiles and ``stages`` tile buffers, in the kernel's order;
the test runs them against each other for every small (n, stages).  Keep these
generators in step with the kernel when its hand-over changes.
"""
import pytest


def softmax_warpgroup(n, stages):
    """Warpgroup 0: S = Q K^T, softmax, O[:, :256] (QK^T and the softmax of tile
    j + 1 run while P V of tile j is on the tensor cores)."""
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
            yield "arrive", "buf_free"                   # P V(j) done: tile j's buffer may be refilled
    if n > 0:
        yield "sync", "p_free"                           # the last alpha was read
    yield "sync", "epilogue"


def loader_warpgroup(n, stages):
    """Warpgroup 1: cp.async loads, O[:, 256:]; refills tile j-1's buffer in iteration j."""
    if n > 0:
        yield "arrive", "tile_ready"
    for j in range(n):
        yield "sync", "p_ready"
        yield "arrive", "p_free"
        if j + 1 < n:
            yield "arrive", "tile_ready"
        if j >= 1 and j - 1 + stages < n:
            yield "sync", "buf_free"                     # then load tile j-1 + stages
    yield "sync", "epilogue"


def run(n, stages, warpgroups=(softmax_warpgroup, loader_warpgroup)):
    """'ok', or what went wrong: a deadlock, a warpgroup joining one barrier
    phase twice, or arrivals left pending at exit -- under each of three
    interleavings: alternating, and each warpgroup running ahead as far as it
    can (which finds a warpgroup arriving twice before the other comes)."""
    for lead in (None, 0, 1):
        result = _run_one(n, stages, warpgroups, lead)
        if result != "ok":
            return result
    return "ok"


def _run_one(n, stages, warpgroups, lead):
    gens = [wg(n, stages) for wg in warpgroups]
    blocked = [None, None]           # (barrier, phase) a warpgroup waits on
    phase, members, done = {}, {}, [False, False]
    moved = True
    while moved:
        moved = False
        for w in ((0, 1) if lead is None else (lead, 1 - lead)):
            while not done[w]:
                if blocked[w] is not None:
                    bar, ph = blocked[w]
                    if phase.get(bar, 0) == ph:
                        break
                    blocked[w] = None
                try:
                    op, bar = next(gens[w])
                except StopIteration:
                    done[w] = moved = True
                    break
                moved = True
                joined = members.setdefault(bar, [])
                if w in joined:
                    return f"warpgroup {w} joins {bar} phase {phase.get(bar, 0)} twice"
                joined.append(w)
                if len(joined) == 2:
                    phase[bar] = phase.get(bar, 0) + 1
                    members[bar] = []
                elif op == "sync":
                    blocked[w] = (bar, phase.get(bar, 0))
                if lead is None:
                    break                # alternate: one operation per turn
    if not all(done):
        return f"deadlock: {blocked}"
    pending = {b: m for b, m in members.items() if m}
    return f"pending arrivals at exit: {pending}" if pending else "ok"


@pytest.mark.parametrize("stages", [3, 4, 5])
def test_hand_over_neither_hangs_nor_leaves_arrivals(stages):
    assert {n: run(n, stages) for n in range(24)} == {n: "ok" for n in range(24)}


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
