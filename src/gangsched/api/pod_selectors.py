"""Service, ReplicationController, ReplicaSet and StatefulSet, read only for their pod selectors.

kube-scheduler reads these four kinds for one purpose: PodTopologySpread's system default constraints take
their label selector from the objects that select the pod (`helper.DefaultSelector` in
pkg/scheduler/framework/plugins/helper/spread.go). So only the envelope and `spec.selector` are typed here;
every other field of a manifest (templates, ports, replicas) is accepted and not kept, so that a Deployment's
ReplicaSet or a StatefulSet dumped from a cluster loads as it is, and live mode's informers decode only what
they use. `from_dict` / `to_dict` behave like a lightkube model's.
"""

from __future__ import annotations

from typing import Any, Self

import msgspec
from lightkube.models import meta_v1

__all__ = [
    "ReplicaSet",
    "ReplicationController",
    "Service",
    "StatefulSet",
]


class _Model(msgspec.Struct, omit_defaults=True, kw_only=True):
    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> Self:
        return msgspec.convert(doc, cls)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = msgspec.to_builtins(self)
        return result


class MapSelectorSpec(_Model):
    """A `spec.selector` given as a plain label map (Service, ReplicationController); None selects nothing."""

    selector: dict[str, str] | None = None


class TemplateMeta(_Model):
    """A pod template, down to its labels: a ReplicationController without a selector selects them (the
    v1 API's defaulting, SetDefaults_ReplicationController)."""

    metadata: meta_v1.ObjectMeta | None = None


class ReplicationControllerSpec(MapSelectorSpec):
    template: TemplateMeta | None = None


class LabelSelectorSpec(_Model):
    """A `spec.selector` given as a metav1.LabelSelector (ReplicaSet, StatefulSet)."""

    selector: meta_v1.LabelSelector | None = None


class _Object(_Model):
    apiVersion: str | None = None
    kind: str | None = None
    metadata: meta_v1.ObjectMeta | None = None


class Service(_Object):
    spec: MapSelectorSpec | None = None


class ReplicationController(_Object):
    spec: ReplicationControllerSpec | None = None


class ReplicaSet(_Object):
    spec: LabelSelectorSpec | None = None


class StatefulSet(_Object):
    spec: LabelSelectorSpec | None = None
