"""JobSet (`jobset.x-k8s.io/v1alpha2`): read so that multi-role jobs can be expanded by the builder.

JobSet is a CRD (kubernetes-sigs/jobset) and lightkube-models has no type for it, so only the envelope is
typed here: metadata is a real ObjectMeta, `spec` and `status` stay plain dicts that
gangsched.builder.jobset validates field by field. Not a Kubernetes type of our own making: nothing here
interprets the spec.
"""

from __future__ import annotations

from typing import Any

import msgspec
from lightkube.models import meta_v1

__all__ = ["JOBSET_API_VERSION", "JobSet"]

JOBSET_API_VERSION = "jobset.x-k8s.io/v1alpha2"


class JobSet(msgspec.Struct, omit_defaults=True, kw_only=True):
    """A JobSet as read from a manifest; `from_dict` / `to_dict` like a lightkube model."""

    apiVersion: str | None = None
    kind: str | None = None
    metadata: meta_v1.ObjectMeta | None = None
    spec: dict[str, Any] | None = None
    status: dict[str, Any] | None = None

    @classmethod
    def from_dict(cls, doc: dict[str, Any]) -> JobSet:
        return msgspec.convert(doc, cls)

    def to_dict(self) -> dict[str, Any]:
        result: dict[str, Any] = msgspec.to_builtins(self)
        return result
