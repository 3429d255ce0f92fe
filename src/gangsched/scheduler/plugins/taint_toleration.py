"""TaintToleration: NoSchedule/NoExecute taints must be tolerated; PreferNoSchedule ones lower the score."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

import numpy as np

from ..snapshot import Snapshot, Taint
from . import Rejections

if TYPE_CHECKING:
    import numpy.typing as npt

NAME = "TaintToleration"
WEIGHT = 3
UNSCHEDULABLE_TAINT = Taint("node.kubernetes.io/unschedulable", "", "NoSchedule")


def tolerates(tolerations: list[Any], taint: Taint) -> bool:
    """Upstream's Toleration.ToleratesTaint over a list."""
    for t in tolerations:
        if t.effect and t.effect != taint.effect:
            continue
        if t.key and t.key != taint.key:
            continue
        op = t.operator or "Equal"
        if op == "Exists" or (op == "Equal" and (t.value or "") == taint.value):
            return True
    return False


def filter_nodes(snap: Snapshot, spec: Any) -> Rejections:
    """One rejection per distinct first untolerated taint, as upstream reports the first one it finds."""
    tolerations = list(spec.tolerations or [])
    by_reason: dict[str, list[int]] = {}
    for set_id, taints in enumerate(snap.taint_sets):
        for taint in taints:
            if taint.effect in ("NoSchedule", "NoExecute") and not tolerates(tolerations, taint):
                reason = f"node(s) had untolerated taint {{{taint.key}: {taint.value}}}"
                by_reason.setdefault(reason, []).append(set_id)
                break
    return [(np.isin(snap.taint_set_of, ids), reason) for reason, ids in by_reason.items()]


def raw_scores(snap: Snapshot, spec: Any) -> npt.NDArray[np.int64] | None:
    """Per node, how many PreferNoSchedule taints the pod does not tolerate; None when all are zero."""
    tolerations = list(spec.tolerations or [])
    per_set = [
        sum(1 for t in taints if t.effect == "PreferNoSchedule" and not tolerates(tolerations, t))
        for taints in snap.taint_sets
    ]
    if not any(per_set):
        return None
    return np.array(per_set, dtype=np.int64)[snap.taint_set_of]


def normalize(counts: npt.NDArray[np.int64]) -> npt.NDArray[np.int64]:
    """DefaultNormalizeScore reversed: the fewest untolerated PreferNoSchedule taints score 100."""
    top = counts.max() if counts.size else 0
    return 100 - counts * 100 // top if top > 0 else np.full(counts.shape, 100, dtype=np.int64)
