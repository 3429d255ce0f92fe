"""kube-scheduler's default filter and score plugins, vectorised over a Snapshot's nodes.

Filters return `Rejections`: (mask of rejected nodes, reason) pairs; the evaluator keeps, for each node, the
reason of the first plugin that rejected it, in upstream's plugin order (`evaluator.FILTERS`). A plugin is
one module; the evaluator's FILTERS and SCORES tables say when it runs:
- static: it reads only the pod's spec and the nodes, so it runs once per equivalence class;
- resources: it reads the nodes' usage, refreshed on the nodes the snapshot's change log names;
- pods: it reads other pods (ports, labels, affinity terms), through `PodsView` counters that follow the
  snapshot's pod log; it runs per pod, given a `PodContext`.
"""

from __future__ import annotations

from collections.abc import Hashable
from typing import TYPE_CHECKING, Any, TypeAlias

import numpy as np
from msgspec import Struct, field

from ..podtraits import PodTraits

if TYPE_CHECKING:  # numpy.typing is for the checker: `gangsched schedule` never imports it (entry.py)
    import numpy.typing as npt

BoolArray: TypeAlias = "npt.NDArray[np.bool_]"
Int64Array: TypeAlias = "npt.NDArray[np.int64]"
Rejections = list[tuple[BoolArray, str]]

__all__ = ["BoolArray", "Int64Array", "PodContext", "Rejections"]


class PodContext(Struct):
    """One pod as the pods-stage plugins see it: its traits and spec, and two static per-node verdicts of
    its class that PodTopologySpread's node inclusion policies reuse."""

    key: Hashable  # names this context (its class and traits) for caches that outlive one call
    traits: PodTraits
    spec: Any
    node_affinity_ok: BoolArray  # nodeSelector and required node affinity match
    taints_ok: BoolArray  # no untolerated NoSchedule / NoExecute taint
    cache: dict[Hashable, Any] = field(default_factory=dict)  # plugins' per-context static work
