"""NodeName: a pod that names a node fits only there (upstream plugins/nodename/node_name.go).

gangsched, like kube-scheduler, treats a pod with `spec.nodeName` as already bound and never schedules it,
so for the pods it schedules this filter rejects no node; it is kept so that the filter table is upstream's.
"""

from __future__ import annotations

from typing import Any

import numpy as np

from ..snapshot import Snapshot
from . import Rejections

NAME = "NodeName"
REASON = "node(s) didn't match the requested node name"


def filter_nodes(snap: Snapshot, spec: Any) -> Rejections:
    name = spec.nodeName
    if not name:
        return []
    other = np.ones(len(snap), dtype=bool)
    if name in snap.index:
        other[snap.index[name]] = False
    return [(other, REASON)]
