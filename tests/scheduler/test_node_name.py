"""NodeName's filter, called directly: gangsched never schedules a pod that names its node (it is bound
already), so no cycle reaches the filter; these are upstream's TestNodeName cases
(plugins/nodename/node_name_test.go, v1.37.2) and its rule `Fits`: no nodeName, or the node's own name."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube.models import core_v1

from gangsched.scheduler.plugins import node_name
from gangsched.scheduler.snapshot import Snapshot

from .plugin_cases import node


def spec(name: str | None) -> Any:
    return core_v1.PodSpec.from_dict({"containers": [{"name": "c", "image": "i"}], "nodeName": name})


@pytest.mark.parametrize(
    ("wanted", "rejected"),
    [
        (None, []),  # "no host specified": every node fits
        ("foo", ["bar", "baz"]),  # "host matches" on foo; every other node "host doesn't match"
        ("qux", ["foo", "bar", "baz"]),  # a node that does not exist: no node matches
    ],
)
def test_node_name_filter(wanted: str | None, rejected: list[str]) -> None:
    snap = Snapshot([node("foo"), node("bar"), node("baz")])
    out = node_name.filter_nodes(snap, spec(wanted))
    assert all(mask.dtype == bool for mask, _ in out)  # masks the evaluator combines with ~ and &
    got = [name for name, i in snap.index.items() for mask, _ in out if mask[i]]
    assert sorted(got) == sorted(rejected)
    # one rejection at most, with upstream's ErrReason, as an UnschedulableAndUnresolvable status
    assert [reason for _, reason in out] == (
        ["node(s) didn't match the requested node name"] if wanted else []
    )
