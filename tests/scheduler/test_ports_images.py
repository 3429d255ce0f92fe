"""NodePorts and ImageLocality cases written by hand from upstream's table tests
(plugins/nodeports/node_ports_test.go, plugins/imagelocality/image_locality_test.go, v1.37.2)."""

from __future__ import annotations

from typing import Any

import numpy as np
import pytest
from lightkube.models import core_v1

from gangsched.scheduler.plugins import image_locality
from gangsched.scheduler.plugins.node_ports import REASON
from gangsched.scheduler.podinfo import pod_info

from .plugin_cases import evaluator, node, pod, verdicts

MB = 1024 * 1024


def ports(*specs: str) -> list[dict[str, Any]]:
    """upstream's newPod("m1", "UDP/127.0.0.1/8080", ...) notation"""
    out = []
    for spec in specs:
        protocol, ip, port = spec.split("/")
        out.append({"containerPort": int(port), "hostPort": int(port), "hostIP": ip, "protocol": protocol})
    return out


@pytest.mark.parametrize(
    ("wanted", "used", "fits"),
    [
        (["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/9090"], True),  # other port
        (["UDP/127.0.0.1/8080"], ["UDP/127.0.0.1/8080"], False),  # same udp port
        (["TCP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], False),  # same tcp port
        (["TCP/127.0.0.1/8080"], ["TCP/127.0.0.2/8080"], True),  # different host ip
        (["UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8080"], True),  # different protocol
        (
            ["UDP/127.0.0.1/8000", "UDP/127.0.0.1/8080"],
            ["UDP/127.0.0.1/8080"],
            False,
        ),  # second udp port conflict
        (["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8080"], ["TCP/127.0.0.1/8001", "UDP/127.0.0.1/8081"], False),
        (
            ["TCP/0.0.0.0/8001"],
            ["TCP/127.0.0.1/8001"],
            False,
        ),  # first tcp port conflict due to 0.0.0.0 hostIP
        (["TCP/10.0.10.10/8001", "TCP/0.0.0.0/8001"], ["TCP/127.0.0.1/8001"], False),
        (["TCP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], False),  # second tcp port conflict to 0.0.0.0 hostIP
        (["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001"], True),  # second different protocol
        (["UDP/127.0.0.1/8001"], ["TCP/0.0.0.0/8001", "UDP/0.0.0.0/8001"], False),
    ],
)
def test_node_ports(wanted: list[str], used: list[str], fits: bool) -> None:
    ev = evaluator([node("n1")], [pod("e", node_name="n1", ports=ports(*used))])
    assert verdicts(ev, pod(ports=ports(*wanted))) == {"n1": None if fits else REASON}


def test_sidecar_init_container_ports_count_plain_init_containers_do_not() -> None:
    # "non-sidecar initContainer using hostPort" / "TCP hostPort conflict from sidecar initContainer"
    ev = evaluator([node("n1")], [pod("e", node_name="n1", ports=ports("TCP/0.0.0.0/8001"))])
    for restart, want in ((None, None), ("Always", REASON)):
        incoming = pod()
        init: dict[str, Any] = {"name": "init", "image": "i", "ports": ports("TCP/0.0.0.0/8001")}
        if restart:
            init["restartPolicy"] = restart
        incoming.spec.initContainers = [core_v1.Container.from_dict(init)]
        fresh = core_v1.Pod.from_dict(incoming.to_dict())  # traits are interned per content
        assert verdicts(ev, fresh) == {"n1": want}


def images(*entries: tuple[list[str], int]) -> dict[str, Any]:
    return {"images": [{"names": names, "sizeBytes": size * MB} for names, size in entries]}


NODE_40_300_2000 = images(
    (["gcr.io/40:latest", "gcr.io/40:v1", "gcr.io/40:v1"], 40),
    (["gcr.io/300:latest", "gcr.io/300:v1"], 300),
    (["gcr.io/2000:latest"], 2000),
)
NODE_250_10 = images((["gcr.io/250:latest"], 250), (["gcr.io/10:latest", "gcr.io/10:v1"], 10))


def image_scores(nodes: list[Any], wanted: list[str]) -> dict[str, int]:
    ev = evaluator(nodes, [])
    return ev.node_scores(pod_info(pod(images=wanted, cpu="0"), 0)).get("ImageLocality", {})


def test_image_locality() -> None:
    two = [node("node1", **NODE_40_300_2000), node("node2", **NODE_250_10)]
    # "two images spread on two nodes, prefer the larger image one": 0 (40M/2 < 23M) and 5
    assert image_scores(two, ["gcr.io/40", "gcr.io/250"]) == {"node1": 0, "node2": 5}
    # "two images on one node, prefer this node": 100 * ((40M + 300M)/2 - 23M) / (2000M - 23M) = 7
    assert image_scores(two, ["gcr.io/40", "gcr.io/300"]) == {"node1": 7, "node2": 0}
    # 2000M on one node of two counts 1000M: 100 * (1000M - 23M) / (2000M - 23M) = 49
    assert image_scores(two, ["gcr.io/2000", "gcr.io/10"]) == {"node1": 49, "node2": 0}
    # "if exceed limit, use limit": 4000M / 2 >= 1000M x 2 images -> 100
    big = [node("node1", **images((["gcr.io/4000:latest"], 4000))), node("node2", **NODE_250_10)]
    assert image_scores(big, ["gcr.io/4000", "gcr.io/10"]) == {"node1": 100, "node2": 0}


def test_no_node_has_the_images() -> None:
    assert image_scores([node("node1"), node("node2")], ["gcr.io/40"]) == {}


NODE_600_40_900 = images(
    (["gcr.io/600:latest"], 600), (["gcr.io/40:latest"], 40), (["gcr.io/900:latest"], 900)
)
NODE_300_600_900 = images(
    (["gcr.io/300:latest"], 300), (["gcr.io/600:latest"], 600), (["gcr.io/900:latest"], 900)
)
NODE_4000_30 = images((["gcr.io/4000:latest"], 4000), (["gcr.io/30:latest"], 30))
NODE_20_30_40 = images((["gcr.io/20:latest"], 20), (["gcr.io/30:latest"], 30), (["gcr.io/40:latest"], 40))


def spec_pod(containers: list[str], init: tuple[str, ...] = (), volumes: tuple[str, ...] = ()) -> Any:
    """A pod of those container, init container and image volume images (upstream's v1.PodSpec literals)."""
    spec = {
        "containers": [{"name": f"c{i}", "image": image} for i, image in enumerate(containers)],
        "initContainers": [{"name": f"i{i}", "image": image} for i, image in enumerate(init)],
        "volumes": [{"name": f"v{i}", "image": {"reference": ref}} for i, ref in enumerate(volumes)],
    }
    return core_v1.Pod.from_dict(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": "p", "namespace": "default"}, "spec": spec}
    )


@pytest.mark.parametrize(
    ("statuses", "incoming", "want"),
    [
        # "if exceed limit, use limit (with node which has no images present)": 4000M held by 1 node of 3
        # counts 4000M/3 = 1333M: 100 * (1333M - 23M) / (1000M * 2 - 23M) = 66; 10M/3 < 23M: 0
        ([NODE_4000_30, NODE_250_10, {}], spec_pod(["gcr.io/10", "gcr.io/4000"]), [66, 0, 0]),
        # "pod with multiple large images, node2 is preferred": 600M and 900M are on 2 nodes of 3;
        # node1 100 * (400M + 600M - 23M) / (1000M * 3 - 23M) = 32, node2 (100M + 400M + 600M - 23M): 36
        (
            [NODE_600_40_900, NODE_300_600_900, {}],
            spec_pod(["gcr.io/300", "gcr.io/600", "gcr.io/900"]),
            [32, 36, 0],
        ),
        # "pod with multiple small images": 30M is on both nodes, 40M on one of 2:
        # node1 100 * (30M + 40M/2 - 23M) / (1000M * 2 - 23M) = 1; node2 100 * (30M - 23M) / 1977M = 0
        ([NODE_20_30_40, NODE_4000_30], spec_pod(["gcr.io/30", "gcr.io/40"]), [1, 0]),
        # "pod with ImageVolume": the volume's image counts as a second image (limit 2000M):
        # 100 * (300M/2 - 23M) / (2000M - 23M) = 6; 30M/2 < 23M: 0
        ([NODE_300_600_900, NODE_4000_30], spec_pod(["gcr.io/30"], volumes=("gcr.io/300",)), [6, 0]),
        # "same images as ImageVolume pod but as regular container images": the same 6 and 0
        ([NODE_300_600_900, NODE_4000_30], spec_pod(["gcr.io/30", "gcr.io/300"]), [6, 0]),
        # "include InitContainers": the init container's 300M counts like a container's: 6; 30M/2: 0
        ([NODE_40_300_2000, NODE_20_30_40], spec_pod(["gcr.io/30"], init=("gcr.io/300",)), [6, 0]),
        # written from calculatePriority's clamp (not an upstream case): 3000M on 1 node of 2 counts 1500M,
        # above the one image's 1000M limit, so it scores the maximum
        ([images((["gcr.io/3000:latest"], 3000)), {}], spec_pod(["gcr.io/3000"]), [100, 0]),
    ],
)
def test_image_locality_cases(statuses: list[dict[str, Any]], incoming: Any, want: list[int]) -> None:
    ev = evaluator([node(f"node{i + 1}", **status) for i, status in enumerate(statuses)], [])
    raw = image_locality.raw_scores(ev.snap, incoming.spec)
    assert raw is not None and raw.dtype == np.int64 and raw.tolist() == want  # integers, as upstream's int64


@pytest.mark.parametrize(
    ("name", "want"),
    [
        ("root", "root:latest"),
        ("gcr.io:5000/root", "gcr.io:5000/root:latest"),  # the registry's port is no tag
        ("root:tag", "root:tag"),
        ("root@sha256:" + "0" * 64, "root@sha256:" + "0" * 64),
        ("gcr.io:5000/root:tag", "gcr.io:5000/root:tag"),  # the last ':' after the last '/' is the tag
    ],
)
def test_normalized_image_name(name: str, want: str) -> None:
    """upstream's TestNormalizedImageName cases and its rule: `:latest` is added when the last ':' does not
    come after the last '/'."""
    assert image_locality.normalized_image_name(name) == want
