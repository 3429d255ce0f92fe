"""PodTopologySpread's cluster-level default constraints (the default profile's `defaultingType: System`).

Upstream (pkg/scheduler/framework/plugins/podtopologyspread/{plugin.go,common.go}): a pod that states no
topologySpreadConstraints of its own is scored as if it had two ScheduleAnyway constraints, hostname with
maxSkew 3 and zone with maxSkew 5 (`systemDefaultConstraints`), whose label selector is built from the
objects that select the pod (`helper.DefaultSelector`, plugins/helper/spread.go):
- the `spec.selector` maps of the Services in the pod's namespace whose selector matches the pod's labels
  (a Service without a selector selects nothing), merged;
- the pod's controller (the ownerReference with `controller: true`), looked up by name in its namespace:
  a v1 ReplicationController merges its selector map in; an apps/v1 ReplicaSet or StatefulSet adds its
  selector's requirements.
When that selector is empty the defaults are skipped, as for a pod no such object selects. Being
ScheduleAnyway, they never filter a node.
"""

from __future__ import annotations

from collections.abc import Iterable
from typing import TYPE_CHECKING, Any

from ..api.owners import controller_of
from .labelselector import EVERYTHING, Requirement, Selector, compile_selector

if TYPE_CHECKING:
    from ..store.store import Store

__all__ = ["SELECTING_KINDS", "PodSelectors"]

#: The kinds whose objects feed the default selector.
SELECTING_KINDS = ("Service", "ReplicationController", "ReplicaSet", "StatefulSet")

# (apiVersion, kind) of a controller ownerReference -> the kind whose selector counts (spread.go rcKind, ...)
_CONTROLLERS = {
    ("v1", "ReplicationController"): "ReplicationController",
    ("apps/v1", "ReplicaSet"): "ReplicaSet",
    ("apps/v1", "StatefulSet"): "StatefulSet",
}


class PodSelectors:
    """helper.DefaultSelector over a Store's Services, ReplicationControllers, ReplicaSets and StatefulSets.
    Services are indexed by namespace; call `changed()` whenever an object of those kinds changes."""

    def __init__(self, store: Store) -> None:
        self.store = store
        self._services: dict[str, list[dict[str, str]]] | None = None

    def changed(self) -> None:
        self._services = None

    def _service_selectors(self, namespace: str) -> Iterable[dict[str, str]]:
        if self._services is None:
            self._services = {}
            for svc in self.store.list("Service"):
                selector = svc.spec.selector if svc.spec is not None else None
                if selector is not None:  # a nil selector matches nothing, not everything
                    self._services.setdefault(svc.metadata.namespace, []).append(selector)
        return self._services.get(namespace, ())

    def selector_for(self, pod: Any) -> Selector:
        """The default selector of `pod` (EVERYTHING, which is empty, when nothing selects it)."""
        meta = pod.metadata
        namespace, labels = meta.namespace, meta.labels or {}
        merged: dict[str, str] = {}
        for selector in self._service_selectors(namespace):
            if all(k in labels and labels[k] == v for k, v in selector.items()):
                merged.update(selector)
        more: tuple[Requirement, ...] = ()
        owner = controller_of(pod)
        kind = _CONTROLLERS.get((owner.apiVersion, owner.kind)) if owner is not None else None
        if owner is not None and kind is not None:
            controller = self.store.get(kind, (namespace, owner.name))
            spec = controller.spec if controller is not None else None
            if spec is not None and kind == "ReplicationController":
                merged.update(spec.selector or {})
            elif spec is not None:
                # an absent selector (labels.Nothing) has no requirements to add
                more = compile_selector(spec.selector).requirements
        if not merged and not more:
            return EVERYTHING
        return Selector(tuple(Requirement(k, "In", frozenset([v])) for k, v in sorted(merged.items())) + more)
