"""Object builders for builder tests: a Job from a few keyword arguments, as upstream's MakeJob does."""

from __future__ import annotations

from typing import Any

from lightkube.models import batch_v1


def make_job(
    name: str = "train",
    *,
    namespace: str = "ml",
    parallelism: int | None = 4,
    completions: int | None = None,
    indexed: bool = False,
    scheduling: dict[str, Any] | None = None,
    uid: str | None = None,
    **spec_extra: Any,
) -> batch_v1.Job:
    spec: dict[str, Any] = {
        "template": {
            "metadata": {"labels": {"app": name}},
            "spec": {"restartPolicy": "Never", "containers": [{"name": "c", "image": "trainer"}]},
        }
    }
    if parallelism is not None:
        spec["parallelism"] = parallelism
    if completions is not None:
        spec["completions"] = completions
    if indexed:
        spec["completionMode"] = "Indexed"
    if scheduling is not None:
        spec["scheduling"] = scheduling
    spec.update(spec_extra)
    meta: dict[str, Any] = {"name": name, "namespace": namespace}
    if uid is not None:
        meta["uid"] = uid
    job: batch_v1.Job = batch_v1.Job.from_dict(
        {"apiVersion": "batch/v1", "kind": "Job", "metadata": meta, "spec": spec}
    )
    return job
