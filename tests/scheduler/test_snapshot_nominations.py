"""The room nominated pods hold in the Snapshot (upstream's nominator with addGENominatedPods): a pending pod
nominated to a node holds its requests there against pods of equal or lower priority only, never against
itself, and placing it (assume) ends its nomination while the undo gives it back."""

from __future__ import annotations

import numpy as np
from lightkube.models import core_v1, meta_v1

from gangsched.scheduler.snapshot import CPU, MEMORY, PODS, Snapshot

GIB = 2**30 * 1000  # milli-units


def snapshot(nodes: int = 3) -> Snapshot:
    return Snapshot(
        core_v1.Node(
            metadata=meta_v1.ObjectMeta(name=f"n{i}"),
            status=core_v1.NodeStatus(allocatable={"cpu": "4", "memory": "8Gi"}),
        )
        for i in range(nodes)
    )


def column(cpu: int, memory: int, pods: int, rows: int) -> list[int]:
    out = [0] * rows
    out[CPU], out[MEMORY], out[PODS] = cpu, memory, pods
    return out


def test_a_nomination_holds_its_requests_on_its_node_for_equal_and_lower_priorities() -> None:
    snap = snapshot()
    rows = len(snap.resources)
    snap.nominate(("ns", "a"), 1, snap.vector({"cpu": 1000, "memory": GIB}, (1000, GIB)), 100)
    for priority in (100, 50):
        held = snap.held_on(1, priority)
        assert held is not None
        assert held.tolist() == column(1000, GIB, 1000, rows)
    assert snap.held_on(1, 101) is None, "a pod of higher priority ignores the nomination"
    assert snap.held_on(0, 100) is None and snap.held_on(2, 100) is None, "only its own node is held"


def test_nominations_at_several_levels_add_up_from_the_asking_priority_upwards() -> None:
    snap = snapshot()
    rows = len(snap.resources)
    snap.nominate(("ns", "low"), 2, snap.vector({"cpu": 1000}, (1000, 0)), 10)
    snap.nominate(("ns", "high"), 2, snap.vector({"cpu": 2000}, (2000, 0)), 100)
    snap.nominate(("ns", "other"), 0, snap.vector({"cpu": 500}, (500, 0)), 100)
    on_2 = snap.held_on(2, 10)
    assert on_2 is not None and on_2.tolist() == column(3000, 0, 2000, rows)
    on_2 = snap.held_on(2, 50)
    assert on_2 is not None and on_2.tolist() == column(2000, 0, 1000, rows)
    on_0 = snap.held_on(0, 10)
    assert on_0 is not None and on_0.tolist() == column(500, 0, 1000, rows)
    assert snap.held_on(1, 10) is None
    # the pod asking never counts its own nomination
    own = snap.held_on(2, 10, ("ns", "high"))
    assert own is not None and own.tolist() == column(1000, 0, 1000, rows)
    cols, held = snap.held_for(100, ("ns", "other"))
    assert dict(zip(cols.tolist(), held[CPU].tolist(), strict=True)) == {0: 0, 2: 2000}


def test_renominating_moves_the_room_and_unnominating_frees_it() -> None:
    snap = snapshot()
    vec = snap.vector({"cpu": 1000}, (1000, 0))
    snap.nominate(("ns", "a"), 0, vec, 100)
    snap.nominate(("ns", "a"), 2, vec, 100)  # replaces the first nomination
    assert snap.held_on(0, 100) is None
    held = snap.held_on(2, 100)
    assert held is not None and held[CPU] == 1000
    assert snap.unnominate(("ns", "a")) == (2, vec, 100)
    assert snap.held_on(2, 100) is None and not snap.nominated
    assert snap.unnominate(("ns", "a")) is None


def test_placing_a_nominated_pod_ends_its_nomination_and_the_undo_restores_it() -> None:
    snap = snapshot()
    vec = snap.vector({"cpu": 1000}, (1000, 0))
    snap.nominate(("ns", "a"), 1, vec, 100)
    undo = snap.place(("ns", "a"), 1, vec)
    assert snap.held_on(1, 100) is None, "assumed, it is counted in `used` instead"
    assert snap.used[CPU, 1] == 1000
    undo()
    assert snap.used[CPU, 1] == 0
    held = snap.held_on(1, 100)
    assert held is not None and held[CPU] == 1000
    assert snap.nominated[("ns", "a")] == (1, vec, 100)


def test_a_resource_first_asked_for_after_a_nomination_extends_the_held_room() -> None:
    snap = snapshot()
    snap.nominate(("ns", "a"), 0, snap.vector({"cpu": 1000}, (1000, 0)), 100)
    gpu = snap.vector({"example.com/gpu": 1000}, (0, 0))  # no node offers it: a new row of zeros
    row = snap.rindex["example.com/gpu"]
    assert snap.alloc[row].tolist() == [0, 0, 0]
    snap.nominate(("ns", "b"), 0, gpu, 100)
    held = snap.held_on(0, 100)
    assert held is not None and held[row] == 1000 and held[CPU] == 1000
    assert np.array_equal(snap.used, np.zeros_like(snap.alloc))
