"""NodeUnschedulable: cordoned nodes take only pods that tolerate node.kubernetes.io/unschedulable."""

from __future__ import annotations

from typing import Any

from ..snapshot import Snapshot
from . import Rejections
from .taint_toleration import UNSCHEDULABLE_TAINT, tolerates

NAME = "NodeUnschedulable"
REASON = "node(s) were unschedulable"


def filter_nodes(snap: Snapshot, spec: Any) -> Rejections:
    if not snap.unschedulable.any() or tolerates(list(spec.tolerations or []), UNSCHEDULABLE_TAINT):
        return []
    return [(snap.unschedulable.copy(), REASON)]
