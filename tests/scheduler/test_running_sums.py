"""The running work's sums per namespace (plan.RunningIndex.namespace_use, which fair share's dominant shares
read at every plan), by hand, as roots start and end and a new resource appears.

The index keeps each pod vector's rows as one column, shared by every pod of that vector (a gang's pods
mostly share one), and adds a root's sum to its namespace's in place. So two things must hold: the kept
columns are dropped when the snapshot's rows change (a new resource), and a namespace's sum is never one of
the roots' own arrays (or ending that root would take its namespace's sum to nothing, whatever still runs).
Quantities are the snapshot's milli-units: 1 GPU, 1 CPU or one pod slot is 1000.
"""

from __future__ import annotations

from typing import Any

from gangsched.scheduler import Profile
from gangsched.scheduler.backfill import BackfillSettings
from gangsched.scheduler.plan import RunningIndex
from gangsched.store import Store
from tests.scenarios.harness import load_objects
from tests.scheduler.plan_objects import START, gang, node, pod, scheduler_for


def _running_gang(name: str, on: str, namespace: str) -> list[dict[str, Any]]:
    """A PodGroup of 2 pods of 2 GPUs and 1 CPU each, both running on `on` since time 0."""
    objects = gang(name, 2, 2, namespace=namespace)
    for p in objects[1:]:
        p["spec"]["nodeName"] = on
        p["status"] = {"phase": "Running", "startTime": START}
    return objects


def _use(index: RunningIndex, store: Store) -> dict[str, dict[str, int]]:
    """Each namespace's non-zero sums, by resource name."""
    kept = index.namespace_use()
    assert kept is not None
    names = index.scheduler.snapshot().resources
    return {
        ns: {names[row]: int(v) for row, v in enumerate(use.tolist()) if v}
        for ns, use in kept.items()
        if use.any()
    }


def test_namespace_sums_by_hand_as_roots_start_and_end() -> None:
    """team-a runs gangs g (on n1) and h (on n2), 2 pods x (2 GPUs, 1 CPU) each, all four pods of one
    vector, and a1 (2 GPUs, 1 CPU on n3); team-b runs b1 (1 GPU, 1 CPU on n3). Then g ends: team-a holds
    h and a1, 6 GPUs (a namespace's sum that were g's own array would drop to h's less g's: nothing). Then
    a node n4 with 2 FPGAs comes and f1 (1 FPGA, 1 CPU, 0 GPU) of team-a runs there: a new resource row,
    read by columns made afresh (kept columns of the old rows would not fit)."""
    objects = [
        node("n1"),
        node("n2"),
        node("n3"),
        *_running_gang("g", "n1", "team-a"),
        *_running_gang("h", "n2", "team-a"),
        pod("a1", 2, on="n3", namespace="team-a"),
        pod("b1", 1, on="n3", namespace="team-b"),
    ]
    store, scheduler = scheduler_for(objects, Profile(backfill=BackfillSettings(depth=1, fair_share=())))
    assert scheduler.backfill is not None
    index = scheduler.backfill._index()
    a = {"cpu": 5000, "pods": 5000, "nvidia.com/gpu": 10_000}
    b = {"cpu": 1000, "pods": 1000, "nvidia.com/gpu": 1000}
    assert _use(index, store) == {"team-a": a, "team-b": b}

    for i in range(2):
        store.delete("Pod", ("team-a", f"g-{i}"))
    a = {"cpu": 3000, "pods": 3000, "nvidia.com/gpu": 6000}
    assert _use(index, store) == {"team-a": a, "team-b": b}

    store.delete("Pod", ("team-a", "a1"))
    a = {"cpu": 2000, "pods": 2000, "nvidia.com/gpu": 4000}
    assert _use(index, store) == {"team-a": a, "team-b": b}

    fpga_node = node("n4")
    fpga_node["status"]["allocatable"]["example.com/fpga"] = "2"
    f1 = pod("f1", 0, on="n4", namespace="team-a")
    requests = f1["spec"]["containers"][0]["resources"]["requests"]
    del requests["nvidia.com/gpu"]
    requests["example.com/fpga"] = "1"
    for obj in load_objects([fpga_node, f1], "test", scheduler.gates):
        store.add(obj)
    a = {"cpu": 3000, "pods": 3000, "nvidia.com/gpu": 4000, "example.com/fpga": 1000}
    assert _use(index, store) == {"team-a": a, "team-b": b}

    store.delete("Pod", ("team-a", "h-0"))
    a = {"cpu": 2000, "pods": 2000, "nvidia.com/gpu": 2000, "example.com/fpga": 1000}
    assert _use(index, store) == {"team-a": a, "team-b": b}
