"""Claims over a job's life in the simulator, computed by hand from the resourceclaim controller's rules
(pkg/controller/resourceclaim/controller.go: syncPod creates a pod's claims from its templates; syncClaim
drops a gone consumer from status.reservedFor and, once nobody is left, clears the allocation of a claim the
scheduler allocated; the garbage collector deletes the claims a gone pod owned).

One node with one device (`gpu-0` of driver gpu.example.com) and no nvidia.com/gpu. Every job asks for one
such device through a claim; each runs 100 s. Without the controller's part in the simulator, the first job's
claim was never created (it waited for ever), and a finished job's device was never freed.
"""

from __future__ import annotations

from typing import Any

from gangsched.sim import SimOptions

from .story import group, node, pod, simulate

DRIVER = "gpu.example.com"
ONE_GPU = {"devices": {"requests": [{"name": "gpu", "exactly": {"deviceClassName": DRIVER}}]}}


def _devices() -> list[dict[str, Any]]:
    return [
        {"apiVersion": "resource.k8s.io/v1", "kind": "DeviceClass", "metadata": {"name": DRIVER},
         "spec": {"selectors": [{"cel": {"expression": f'device.driver == "{DRIVER}"'}}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceSlice", "metadata": {"name": "node-0-gpu"},
         "spec": {"driver": DRIVER, "nodeName": "node-0",
                  "pool": {"name": "node-0", "generation": 1, "resourceSliceCount": 1},
                  "devices": [{"name": "gpu-0"}]}},
        {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
         "metadata": {"name": "one-gpu", "namespace": "ml"},
         "spec": {"spec": ONE_GPU}},
    ]  # fmt: skip


def _claiming(doc: dict[str, Any], claim: dict[str, str]) -> dict[str, Any]:
    spec = doc["spec"]
    spec["containers"][0]["resources"] = {"claims": [{"name": "gpu"}]}
    spec["resourceClaims"] = [{"name": "gpu", **claim}]
    return doc


def test_a_finished_pods_device_goes_to_the_next_pod_and_its_claim_is_deleted() -> None:
    """a (0 s) and b (1 s, input order) each get a claim from the template. a takes gpu-0 at 0 s and ends at
    100 s: its claim loses its consumer, is deallocated and, owned by a, deleted; b then binds at 100 s and
    ends at 200 s."""
    template = {"resourceClaimTemplateName": "one-gpu"}
    docs = [node("node-0", 0), *_devices()]
    docs += [_claiming(pod(name, None, gpus=0, duration="100"), template) for name in ("a", "b")]
    s, jobs, sim = simulate(docs, SimOptions())
    assert [(jobs[n]["start_s"], jobs[n]["end_s"]) for n in ("a", "b")] == [(0.0, 100.0), (100.0, 200.0)]
    assert s["completed"] == 2
    assert list(sim.store.list("ResourceClaim")) == []  # both owned by their pods, both gone with them


def test_a_claim_named_by_pods_outlives_them_deallocated() -> None:
    """A claim the pods name (not made from a template) is not deleted with them: after a ends it has no
    consumer, so its allocation is cleared and the delete-protection finalizer removed; b, which names the
    same claim, allocates it again when a's reservation is gone (a claim reserved for a running pod keeps its
    devices). Here a and b share the claim, so b binds at once beside a (a shared claim is reserved for both),
    and after both end the claim is free again."""
    claim = {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaim",
             "metadata": {"name": "shared", "namespace": "ml"},
             "spec": ONE_GPU}  # fmt: skip
    named = {"resourceClaimName": "shared"}
    docs = [node("node-0", 0), *_devices(), claim]
    for name, work in (("a", "100"), ("b", "300")):
        docs.append(_claiming(pod(name, None, gpus=0, duration=work), named))
    _, jobs, sim = simulate(docs, SimOptions())
    assert [(jobs[n]["start_s"], jobs[n]["end_s"]) for n in ("a", "b")] == [(0.0, 100.0), (1.0, 301.0)]
    left = sim.store.get("ResourceClaim", ("ml", "shared"))
    assert left is not None
    assert left.status.reservedFor is None and left.status.allocation is None
    assert not left.metadata.finalizers


def test_a_gangs_shared_claim_is_released_with_its_podgroup() -> None:
    """Gang g (2 pods, minCount 2) shares one PodGroup claim made from the template
    (DRAWorkloadResourceClaims): the claim is reserved for the PodGroup and owned by it. g runs 0-100 s.
    Gang h, the same shape, arrives at 1 s and cannot have the only device until g's PodGroup is deleted at
    its end: h runs 100-200 s."""
    docs: list[dict[str, Any]] = [node("node-0", 0), *_devices()]
    for name, at in (("g", "00:00"), ("h", "00:01")):
        pg = group(name, 2, "100")
        pg["spec"]["resourceClaims"] = [{"name": "gpu", "resourceClaimTemplateName": "one-gpu"}]
        template = {"resourceClaimTemplateName": "one-gpu"}
        members = [pg] + [_claiming(pod(f"{name}-{i}", name, gpus=0), template) for i in range(2)]
        for doc in members:
            doc["metadata"]["creationTimestamp"] = f"2026-01-01T00:00:{at[-2:]}Z"
        docs += members
    _, jobs, sim = simulate(docs, SimOptions())
    assert [(jobs[n]["start_s"], jobs[n]["end_s"]) for n in ("g", "h")] == [(0.0, 100.0), (100.0, 200.0)]
    assert list(sim.store.list("ResourceClaim")) == []
