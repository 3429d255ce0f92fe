"""Pod requests as upstream's resourcehelper.PodRequests computes them, for fit and for scoring."""

from __future__ import annotations

from typing import Any

import pytest
from lightkube.models import core_v1, meta_v1

from gangsched.scheduler.podinfo import pod_info
from gangsched.scheduler.resources import nonzero_requests, pod_requests

MI = 1024 * 1024 * 1000  # one MiB in milli-units
CPU_DEFAULT, MEM_DEFAULT = 100, 200 * MI


def container(name: str, restart: str | None = None, **requests: str) -> core_v1.Container:
    return core_v1.Container(
        name=name,
        image="i",
        restartPolicy=restart,
        resources=core_v1.ResourceRequirements(requests=requests or None),
    )


def spec(
    *containers: core_v1.Container, init: tuple[core_v1.Container, ...] = (), **extra: Any
) -> core_v1.PodSpec:
    return core_v1.PodSpec(containers=list(containers), initContainers=list(init) or None, **extra)


CASES = [
    # id, spec, fit requests (cpu, memory), scoring requests (cpu, memory)
    ("one-container", spec(container("c", cpu="1", memory="1Gi")), (1000, 1024 * MI), (1000, 1024 * MI)),
    ("omitted-scores-as-default", spec(container("c")), (0, 0), (CPU_DEFAULT, MEM_DEFAULT)),
    ("explicit-zero-stays-zero", spec(container("c", cpu="0", memory="0")), (0, 0), (0, 0)),
    (
        "second-container-omits",
        spec(container("a", cpu="1"), container("b")),
        (1000, 0),
        (1000 + CPU_DEFAULT, 2 * MEM_DEFAULT),
    ),
    (
        "init-larger",
        spec(container("c", cpu="1"), init=(container("i", cpu="3"),)),
        (3000, 0),
        (3000, MEM_DEFAULT),
    ),
    (
        "sidecar-adds-and-defaults",
        spec(container("c", cpu="1"), init=(container("proxy", "Always"), container("i", cpu="2"))),
        (2000, 0),
        (2000 + CPU_DEFAULT, 2 * MEM_DEFAULT),
    ),
    (
        "pod-level-replaces-aggregate",
        spec(
            container("a", cpu="1"),
            container("b", cpu="1"),
            resources=core_v1.ResourceRequirements(requests={"cpu": "3"}),
        ),
        (3000, 0),
        (3000, 2 * MEM_DEFAULT),
    ),
    (
        "overhead-on-top",
        spec(container("c", cpu="1"), overhead={"cpu": "250m", "memory": "64Mi"}),
        (1250, 64 * MI),
        (1250, MEM_DEFAULT + 64 * MI),
    ),
]


@pytest.mark.parametrize(("pod_spec", "fit", "scoring"), [c[1:] for c in CASES], ids=[c[0] for c in CASES])
def test_requests(pod_spec: core_v1.PodSpec, fit: tuple[int, int], scoring: tuple[int, int]) -> None:
    got = pod_requests(pod_spec)
    assert (got.get("cpu", 0), got.get("memory", 0)) == fit
    assert nonzero_requests(pod_spec) == scoring


def test_pods_that_score_differently_are_not_one_equivalence_class() -> None:
    """Same fit requests, different scoring requests: caching one class for both would mis-score one."""

    def pod(name: str, pod_spec: core_v1.PodSpec) -> core_v1.Pod:
        return core_v1.Pod(metadata=meta_v1.ObjectMeta(name=name, namespace="default"), spec=pod_spec)

    one = pod_info(pod("one", spec(container("a", cpu="1"))), 1)
    two = pod_info(pod("two", spec(container("a", cpu="1"), container("b"))), 2)
    assert one.requests == two.requests
    assert one.signature != two.signature
