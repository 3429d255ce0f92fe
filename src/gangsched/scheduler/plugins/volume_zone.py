"""VolumeZone: a bound PV labelled with zones or regions only fits nodes in one of them
(pkg/scheduler/framework/plugins/volumezone). Nodes without any topology label take any volume (a
single-zone cluster); a PV label may list several zones separated by `__`; beta labels on the PV match GA
labels on the node. UnschedulableAndUnresolvable."""

from __future__ import annotations

import numpy as np

from ..snapshot import Snapshot
from ..volumes import PodVolumes
from . import Rejections

NAME = "VolumeZone"
REASON = "node(s) had no available volume zone"
_GA = {
    "failure-domain.beta.kubernetes.io/zone": "topology.kubernetes.io/zone",
    "failure-domain.beta.kubernetes.io/region": "topology.kubernetes.io/region",
}
TOPOLOGY_LABELS = (*_GA, *_GA.values())


def filter_nodes(snap: Snapshot, volumes: PodVolumes) -> Rejections:
    n = len(snap)
    constrained = np.zeros(n, dtype=bool)
    for key in TOPOLOGY_LABELS:
        constrained |= snap.label_codes(key) >= 0
    ok = np.ones(n, dtype=bool)
    for _, pv in volumes.bound:
        labels = (pv.metadata.labels or {}) if pv is not None else {}
        for key in TOPOLOGY_LABELS:
            if key not in labels:
                continue
            allowed = set(labels[key].split("__"))
            hit = np.zeros(n, dtype=bool)
            for node_key in {key, _GA.get(key, key)}:
                codes = snap.label_codes(node_key)
                known = snap.label_values.get(node_key, {})
                wanted = [known[v] for v in allowed if v in known]
                present = codes >= 0
                # the PV's own key first; the GA key only where the node lacks the PV's key
                use = present if node_key == key else present & (snap.label_codes(key) < 0)
                hit |= use & np.isin(codes, wanted)
            ok &= hit
    ok |= ~constrained
    return [] if ok.all() else [(~ok, REASON)]
