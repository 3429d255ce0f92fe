"""scheduler_perf's SchedulingWithResourceClaimTemplate, workload 5000pods_500nodes
(test/integration/scheduler_perf/dra/performance-config.yaml and its templates/): 500 nodes, each with one
ResourceSlice of 10 devices (resourceslice-basic-devices.yaml, with its attributes and capacities), the
DeviceClass `test-class`, 2,500 claims allocated before the clock starts (allocResourceClaims, which fills
the nodes in order), and 2,500 timed pods whose claim comes from a ResourceClaimTemplate asking for one
device. Upstream's threshold: 56 pods/s."""

from __future__ import annotations

from typing import Any

from lightkube.models import core_v1, resource_v1

DRIVER = "test-driver.cdi.k8s.io"
DEVICES_PER_NODE = 10
NODE_ALLOCATABLE = {"cpu": "4", "memory": "32Gi", "pods": "110"}


def _device(i: int, roots: int = 2) -> dict[str, Any]:
    return {
        "name": f"basic-device-{i}",
        "attributes": {
            "driver": {"string": "xe"},
            "driverVersion": {"version": "1.2.3"},
            "resource.k8s.io/pciRoot": {"string": str(i % roots)},
            "family": {"string": "Arc Pro B-Series"},
            "health": {"string": "Healthy"},
            "model": {"string": "B60"},
            "pciAddress": {"string": f"0000:0{i}:00.0"},
            "pciId": {"string": "0xe211"},
            "pciRoot": {"string": f"0{i % roots}"},
            "resource.kubernetes.io/pciBusID": {"string": f"0000:0{i}:00.0"},
            "resource.kubernetes.io/pciRoot": {"string": f"pci0000:0{i % roots}"},
            "sriov": {"bool": True},
            "type": {"string": "gpu"},
        },
        "capacity": {"memory": {"value": "24480Mi"}, "millicores": {"value": "1k"}},
    }


def dra_shape(
    nodes: int = 500, init_claims: int = 2500, pods: int = 2500
) -> tuple[list[Any], list[Any], list[Any]]:
    """(cluster, pods scheduled before the clock, timed pods) as engine.py's shapes."""
    cluster: list[Any] = []
    for i in range(nodes):
        name = f"scheduler-perf-dra-{i}"
        cluster.append(
            core_v1.Node.from_dict(
                {
                    "apiVersion": "v1",
                    "kind": "Node",
                    "metadata": {"name": name, "labels": {"node-with-dra": "true"}},
                    "status": {"allocatable": NODE_ALLOCATABLE, "capacity": NODE_ALLOCATABLE},
                }
            )
        )
        cluster.append(
            resource_v1.ResourceSlice.from_dict(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceSlice",
                    "metadata": {"name": f"resourceslice-{i}"},
                    "spec": {
                        "pool": {"name": f"resourceslice-{i}", "generation": 1, "resourceSliceCount": 1},
                        "driver": DRIVER,
                        "nodeName": name,
                        "devices": [_device(d) for d in range(DEVICES_PER_NODE)],
                    },
                }
            )
        )
    cluster.append(
        resource_v1.DeviceClass.from_dict(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "DeviceClass",
                "metadata": {"name": "test-class"},
                "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]},
            }
        )
    )
    request = {
        "name": "req-0",
        "exactly": {"deviceClassName": "test-class", "allocationMode": "ExactCount", "count": 1},
    }
    for c in range(init_claims):  # allocResourceClaims: node after node, device after device
        node, device = divmod(c, DEVICES_PER_NODE)
        pool = f"resourceslice-{node}"
        cluster.append(
            resource_v1.ResourceClaim.from_dict(
                {
                    "apiVersion": "resource.k8s.io/v1",
                    "kind": "ResourceClaim",
                    "metadata": {"name": f"test-claim-{c}", "namespace": "init"},
                    "spec": {"devices": {"requests": [request]}},
                    "status": {
                        "allocation": {
                            "devices": {
                                "results": [
                                    {
                                        "request": "req-0",
                                        "driver": DRIVER,
                                        "pool": pool,
                                        "device": f"basic-device-{device}",
                                    }
                                ]
                            },
                            "nodeSelector": {
                                "nodeSelectorTerms": [
                                    {
                                        "matchFields": [
                                            {
                                                "key": "metadata.name",
                                                "operator": "In",
                                                "values": [f"scheduler-perf-dra-{node}"],
                                            }
                                        ]
                                    }
                                ]
                            },
                        }
                    },
                }
            )
        )
    cluster.append(
        resource_v1.ResourceClaimTemplate.from_dict(
            {
                "apiVersion": "resource.k8s.io/v1",
                "kind": "ResourceClaimTemplate",
                "metadata": {"name": "test-claim-template", "namespace": "test"},
                "spec": {"spec": {"devices": {"requests": [request]}}},
            }
        )
    )
    timed = [
        core_v1.Pod.from_dict(
            {
                "apiVersion": "v1",
                "kind": "Pod",
                "metadata": {"name": f"test-dra-{p}", "namespace": "test"},
                "spec": {
                    "containers": [
                        {
                            "name": "pause",
                            "image": "registry.k8s.io/pause:3.10.1",
                            "resources": {"claims": [{"name": "resource"}]},
                        }
                    ],
                    "resourceClaims": [
                        {"name": "resource", "resourceClaimTemplateName": "test-claim-template"}
                    ],
                },
            }
        )
        for p in range(pods)
    ]
    return cluster, [], timed
