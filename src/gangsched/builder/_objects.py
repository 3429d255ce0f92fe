"""Small typed accessors for lightkube objects whose metadata and spec are Optional in the models."""

from __future__ import annotations

from typing import TYPE_CHECKING, Any

from lightkube.models import meta_v1

if TYPE_CHECKING:  # imported where used (api/kinds.py): an input without Jobs never needs batch_v1
    from lightkube.models import batch_v1

__all__ = ["job_spec", "metadata_of"]


def metadata_of(obj: Any) -> meta_v1.ObjectMeta:
    """The object's metadata, created empty when missing (mutates `obj` in that case)."""
    meta: meta_v1.ObjectMeta | None = obj.metadata
    if meta is None:
        meta = meta_v1.ObjectMeta()
        obj.metadata = meta
    return meta


def job_spec(job: batch_v1.Job) -> batch_v1.JobSpec:
    """The Job's spec; callers only reach here for Jobs that have one (the builder checks first)."""
    if job.spec is None:
        raise ValueError("Job has no spec")
    return job.spec
