"""The plan's capacity check (plan._could_fit): the candidate times at which a root of identical pods could
fit, by exact arithmetic on what the running work gives back by each time, counted candidate by candidate as
the plan asks for more (with `last_first`, the last candidate is counted once the first `chunk` give none).
Whatever `chunk`, the times must be those computed here by hand, and those counted afresh at each candidate.

Four nodes of 4 GPUs, racks a (n0, n1) and b (n2, n3), running at t = 0 (estimates, on the 60 s grid):
n0: 4 GPUs until 100 (120); n1: 2 GPUs until 200 (240) and 2 until 300 (300); n2: 4 GPUs until 400 (420);
n3: 1 GPU until 500 (540). Candidate times: 0, 120, 240, 300, 420, 540. Whole 4-GPU nodes free then:
0: none; 120: n0; 240: n0; 300: n0, n1; 420: n0, n1, n2; 540: all four.
- gang of 3 x 4 GPUs, anywhere: three whole nodes from 420 on: 420, 540.
- gang of 2 x 4 GPUs in one rack: rack a (n0, n1) from 300 on: 300, 420, 540.
- gang of 2 x 4 GPUs, anywhere, around a reservation of n0 over [300, 900) (the gang runs 200 s): at 120 and
  240 it would run into the reservation on n0, the only whole node: no; 300: n1 only (n0 held): no; 420: n1,
  n2: yes; 540: yes.
- gang of 2 x 3 GPUs, anywhere: nodes with 3 free GPUs: 0: n3 only; 120: n0 and n3: 120, 240, 300, 420, 540.
- gang of 4 x 4 GPUs in one rack: a rack has two nodes: never (not even at 540, when all is free, which is
  checked first with `last_first`: free room only grows with time).
Each with the last candidate counted first or not: the same times.
"""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from hypothesis import given, settings
from hypothesis import strategies as st

from gangsched.scheduler.backfill_settings import PlanSettings
from gangsched.scheduler.estimates import Estimate
from gangsched.scheduler.plan import Reservation, _could_fit, running_work
from tests.scheduler.plan_objects import gang, node, pod, scheduler_for

TIMES = [0.0, 120.0, 240.0, 300.0, 420.0, 540.0]


def _running() -> list[dict[str, Any]]:
    return [
        node("n0", rack="a"),
        node("n1", rack="a"),
        node("n2", rack="b"),
        node("n3", rack="b"),
        pod("r0", 4, on="n0", duration="100"),
        pod("r1", 2, on="n1", duration="200"),
        pod("r2", 2, on="n1", duration="300"),
        pod("r3", 4, on="n2", duration="400"),
        pod("r4", 1, on="n3", duration="500"),
    ]


@pytest.mark.parametrize(
    ("size", "gpus", "rack", "reserved", "want"),
    [
        (3, 4, False, False, [420.0, 540.0]),
        (2, 4, True, False, [300.0, 420.0, 540.0]),
        (2, 4, False, True, [420.0, 540.0]),
        (2, 3, False, False, [120.0, 240.0, 300.0, 420.0, 540.0]),
        (4, 4, True, False, []),
    ],
    ids=["three-whole-nodes", "one-rack", "around-a-reservation", "three-of-four-gpus", "more-than-a-rack"],
)
@pytest.mark.parametrize("chunk", [1, 2, 4, 100])
@pytest.mark.parametrize("last_first", [True, False], ids=["last-first", "in-order"])
def test_the_times_a_gang_could_fit(
    size: int, gpus: int, rack: bool, reserved: bool, want: list[float], chunk: int, last_first: bool
) -> None:
    _, scheduler = scheduler_for([*_running(), *gang("g", size, gpus, duration="200", rack=rack)])
    root = ("PodGroup", "default", "g")
    place = scheduler.placer(root)
    assert place is not None
    running = running_work(scheduler, 0.0, PlanSettings())
    times = np.unique(np.concatenate([running.releases, [0.0]]))
    assert times.tolist() == TIMES
    held = []
    if reserved:
        n0 = scheduler.snapshot().index["n0"]
        held = [Reservation(("Pod", "default", "x"), 300.0, 900.0, frozenset({n0}), None, Estimate(600.0))]
    fits = _could_fit(scheduler, root, place, times, running, held, 200.0, chunk=chunk, last_first=last_first)
    assert list(fits) == want


@pytest.mark.parametrize("chunk", [1, 2, 100])
@pytest.mark.parametrize("last_first", [True, False], ids=["last-first", "in-order"])
def test_a_gang_counts_no_room_its_own_running_pods_give_back(chunk: int, last_first: bool) -> None:
    """Gang g (minCount 3 of 4 GPUs, 200 s) has g-0 running on n0 (released at 240); g-1 and g-2 wait. n1 is
    free from 120, n2 from 300 (n3 never: no estimate). g's own pod gives nothing back to g: at 240 only n1
    is free for it, so its two pods fit first at 300 (counting g-0's release, 240 would pass). The same
    running work, read first for another root (a gang of 1 x 4 GPUs: 120 on), must not change the answer:
    both read the free room the Running keeps."""
    objects = [
        node("n0"),
        node("n1"),
        node("n2"),
        node("n3"),
        gang("g", 3, 4, duration="200")[0],
        pod("g-0", 4, group="g", on="n0"),
        pod("g-1", 4, group="g"),
        pod("g-2", 4, group="g"),
        pod("r1", 4, on="n1", duration="100"),
        pod("r2", 4, on="n2", duration="300"),
        pod("r3", 4, on="n3"),
        *gang("h", 1, 4, duration="200"),
    ]
    _, scheduler = scheduler_for(objects)
    running = running_work(scheduler, 0.0, PlanSettings())
    times = np.unique(np.concatenate([running.releases[running.releases < np.inf], [0.0]]))
    assert times.tolist() == [0.0, 120.0, 240.0, 300.0]
    want = {"h": [120.0, 240.0, 300.0], "g": [300.0]}
    for name in ("h", "g"):
        root = ("PodGroup", "default", name)
        place = scheduler.placer(root)
        assert place is not None
        fits = list(
            _could_fit(scheduler, root, place, times, running, [], 200.0, chunk=chunk, last_first=last_first)
        )
        assert fits == want[name], name


@pytest.mark.parametrize("chunk", [1, 2, 4, 100])
def test_a_reservation_holds_over_its_interval_and_not_at_its_ends(chunk: int) -> None:
    """Gang of 2 x 4 GPUs, anywhere, running 200 s, around a reservation of n0 over [0, 300) and one of n1
    over [500, 900). At 300 the first has ended (a reservation holds before its end) and the gang would end
    at 500, when the second begins (it runs over [300, 500)): n0 and n1 are whole and held by neither, so
    the gang fits from 300 on (420: n0 and n2, n1 held; 540: n0, n2, n3)."""
    _, scheduler = scheduler_for([*_running(), *gang("g", 2, 4, duration="200")])
    root = ("PodGroup", "default", "g")
    place = scheduler.placer(root)
    assert place is not None
    running = running_work(scheduler, 0.0, PlanSettings())
    times = np.unique(np.concatenate([running.releases, [0.0]]))
    index = scheduler.snapshot().index
    held = [
        Reservation(("Pod", "default", "x"), 0.0, 300.0, frozenset({index["n0"]}), None, Estimate(300.0)),
        Reservation(("Pod", "default", "y"), 500.0, 900.0, frozenset({index["n1"]}), None, Estimate(400.0)),
    ]
    fits = _could_fit(scheduler, root, place, times, running, held, 200.0, chunk=chunk)
    assert list(fits) == [300.0, 420.0, 540.0]


def _by_definition(
    scheduler: Any, root: Any, place: Any, times: Any, running: Any, held: list[Reservation], duration: float
) -> tuple[list[float], dict[float, Any]]:
    """The times `_could_fit` must give, each candidate counted afresh: what is free now plus what every
    running pod but the root's own gives back by then, how many pods of the root's class each node takes
    (none where its static filters refuse, none on the nodes of a reservation that overlaps the root's run),
    summed over all nodes or per domain of the topology key; and at each time given, the nodes that take
    one."""
    ev = scheduler.evaluator()
    snap = ev.snap
    c = ev.static_class(place.pods[0])
    own = set(running.columns_of(root))
    codes = snap.label_codes(place.topology_key) if place.topology_key is not None else None
    out, usable = [], {}
    for t in times.tolist():
        free = snap.alloc - snap.used
        for col in range(len(running.pod_node)):
            if running.pod_release[col] <= t and col not in own:
                free[:, running.pod_node[col]] += running.pod_use[:, col]
        takes = np.array(
            [
                min(int(free[row, n]) // v for row, v in c.vec.rows) if c.static_ok[n] else 0
                for n in range(len(snap))
            ]
        ).clip(0)
        for r in held:
            if r.start < t + duration and t < r.end:
                takes[list(r.nodes)] = 0
        if codes is not None:
            takes[codes < 0] = 0
            fits = max(int(takes[codes == d].sum()) for d in range(max(int(codes.max()) + 1, 1)))
        else:
            fits = int(takes.sum())
        if fits >= place.needs:
            out.append(t)
            usable[t] = takes > 0
    return out, usable


@settings(max_examples=60, deadline=None)
@given(
    running_pods=st.lists(
        st.tuples(st.integers(0, 4), st.integers(1, 4), st.sampled_from([None, 50, 100, 200, 300, 400])),
        max_size=10,
    ),
    size=st.integers(1, 4),
    gpus=st.integers(1, 4),
    rack=st.booleans(),
    own=st.booleans(),
    reservations=st.lists(
        st.tuples(
            st.sampled_from([0.0, 120.0, 240.0, 300.0]), st.integers(60, 600), st.sets(st.integers(0, 4))
        ),
        max_size=3,
    ),
    chunk=st.integers(1, 5),
    last_first=st.booleans(),
)
def test_the_times_counted_candidate_by_candidate_are_those_counted_afresh(
    running_pods: list[tuple[int, int, int | None]],
    size: int,
    gpus: int,
    rack: bool,
    own: bool,
    reservations: list[tuple[float, int, set[int]]],
    chunk: int,
    last_first: bool,
) -> None:
    """`_could_fit` counts the first candidate with numpy and each later one from the nodes its released
    work gives back to, keeping the sums in place: on random running work (n4 has no rack label), the
    times and nodes it gives are those counted afresh at each candidate."""
    objects = [
        node("n0", rack="a"),
        node("n1", rack="a"),
        node("n2", rack="b"),
        node("n3", rack="b"),
        node("n4"),
    ]
    used = [0] * 5
    for i, (n, want, seconds) in enumerate(running_pods):
        if used[n] + want <= 4:
            used[n] += want
            objects.append(pod(f"r{i}", want, on=f"n{n}", duration=None if seconds is None else str(seconds)))
    objects += gang("g", size, gpus, duration="200", rack=rack)
    if own and used[4] + gpus <= 4:
        objects.append(pod("g-run", gpus, group="g", on="n4"))
    _, scheduler = scheduler_for(objects)
    root = ("PodGroup", "default", "g")
    place = scheduler.placer(root)
    assert place is not None
    running = running_work(scheduler, 0.0, PlanSettings())
    times = np.unique(np.concatenate([running.releases[running.releases < np.inf], [0.0]]))
    held = [
        Reservation(
            ("Pod", "default", f"x{i}"), start, start + length, frozenset(nodes), None, Estimate(length)
        )
        for i, (start, length, nodes) in enumerate(reservations)
    ]
    usable: dict[float, Any] = {}
    got = list(
        _could_fit(scheduler, root, place, times, running, held, 200.0, chunk, last_first, usable=usable)
    )
    want, want_usable = _by_definition(scheduler, root, place, times, running, held, 200.0)
    assert got == want
    assert usable.keys() == want_usable.keys()
    for t, nodes in want_usable.items():
        assert usable[t].tolist() == nodes.tolist(), t
