"""Manifests for simulator tests, as dicts: the 8-GPU story and a small gang for failure cases."""

from __future__ import annotations

from typing import Any

from gangsched.api.gates import FeatureGates
from gangsched.sim import SimOptions, Simulation
from gangsched.sim.inputs import from_manifests
from gangsched.sim.report import job_rows, summary

from ..scenarios.harness import load_objects


def node(name: str, gpus: int) -> dict[str, Any]:
    return {"apiVersion": "v1", "kind": "Node", "metadata": {"name": name},
            "status": {"allocatable": {"cpu": "32", "memory": "128Gi", "pods": "110",
                                       "nvidia.com/gpu": str(gpus)}}}  # fmt: skip


def group(name: str, min_count: int, duration: str) -> dict[str, Any]:
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "ml", "annotations": {"gangsched.io/duration": duration}},
            "spec": {"schedulingPolicy": {"gang": {"minCount": min_count}}}}  # fmt: skip


def pod(name: str, group: str | None, gpus: int = 1, duration: str | None = None) -> dict[str, Any]:
    meta: dict[str, Any] = {"name": name, "namespace": "ml"}
    if duration:
        meta["annotations"] = {"gangsched.io/duration": duration}
    spec: dict[str, Any] = {"containers": [{"name": "c", "image": "x",
                            "resources": {"requests": {"nvidia.com/gpu": str(gpus)}}}]}  # fmt: skip
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


def eight_gpu_story(duration: str = "2h") -> list[dict[str, Any]]:
    """2 nodes x 4 GPUs; PodGroups train-a, train-b (minCount 6); their pods listed interleaved, so that they
    arrive a-0 at 2 s, b-0 at 3 s, ... b-5 at 13 s (input order, one second apart)."""
    docs = [
        node("gpu-node-1", 4),
        node("gpu-node-2", 4),
        group("train-a", 6, duration),
        group("train-b", 6, duration),
    ]
    for i in range(6):
        docs += [pod(f"train-a-{i}", "train-a"), pod(f"train-b-{i}", "train-b")]
    return docs


def simulate(
    docs: list[dict[str, Any]], options: SimOptions
) -> tuple[dict[str, Any], dict[str, dict[str, Any]], Simulation]:
    """(summary, jobs by name, the finished simulation)."""
    workload = from_manifests(load_objects(docs, "test", FeatureGates()), "test")
    nodes = [o for o in workload.cluster if o.kind == "Node"]
    workload.cluster = nodes + [o for o in workload.cluster if o.kind != "Node"]
    sim = Simulation(workload, options).run()
    return summary(sim), {j["name"]: j for j in job_rows(sim)}, sim
