"""Snapshot.remove_many must equal one remove per key, and its undo must restore the snapshot exactly."""

from __future__ import annotations

import numpy as np
from hypothesis import given, settings
from hypothesis import strategies as st
from lightkube.models import core_v1, meta_v1

from gangsched.scheduler.snapshot import Snapshot


def snapshot(nodes: int) -> Snapshot:
    return Snapshot(
        core_v1.Node(
            metadata=meta_v1.ObjectMeta(name=f"n{i}"),
            status=core_v1.NodeStatus(allocatable={"cpu": "8", "memory": "16Gi", "nvidia.com/gpu": "4"}),
        )
        for i in range(nodes)
    )


PODS = st.lists(
    st.tuples(
        st.integers(0, 4),  # node
        st.sampled_from([{"cpu": 500}, {"cpu": 1000, "memory": 2**30 * 1000}, {"nvidia.com/gpu": 1000}]),
    ),
    min_size=1,
    max_size=30,
)


@settings(max_examples=60, deadline=None)
@given(PODS, st.data())
def test_remove_many_matches_removes_and_undoes_exactly(
    pods: list[tuple[int, dict[str, int]]], data: st.DataObject
) -> None:
    bulk, single = snapshot(5), snapshot(5)
    vectors = {}
    for i, (node, requests) in enumerate(pods):
        key = ("ns", f"p{i}")
        for snap in (bulk, single):
            vec = vectors.setdefault((id(snap), str(requests)), snap.vector(requests, (100, 100)))
            snap.place(key, node, vec)
    before = (bulk.used.copy(), bulk.nonzero_used.copy(), dict(bulk.placed))
    chosen = data.draw(st.lists(st.integers(0, len(pods) + 3), unique=True))  # some keys are not placed
    keys = [("ns", f"p{i}") for i in chosen]
    undo = bulk.remove_many(keys)
    for key in keys:
        single.remove(key)
    assert np.array_equal(bulk.used, single.used)
    assert np.array_equal(bulk.nonzero_used, single.nonzero_used)
    assert bulk.placed.keys() == single.placed.keys()
    assert {before[2][k][0] for k in keys if k in before[2]} <= set(bulk.changed)  # caches refresh them
    undo()
    assert np.array_equal(bulk.used, before[0])
    assert np.array_equal(bulk.nonzero_used, before[1])
    assert bulk.placed == before[2]
