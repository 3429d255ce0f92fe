"""The store's part of the resourceclaim controller, checked against upstream's rules written out by hand
(pkg/controller/resourceclaim/controller.go, v1.37.2):
- syncPod handles every claim of the pod, then applies the merged statuses sorted by name; a claim that
  fails (its template missing) returns an error before that write, so nothing is recorded in that pass,
  though the claims made before it exist and are found again on the retry;
- a pod claim equal to a claim of its PodGroup (resourceclaim.BindTo) uses the PodGroup's claim: nothing is
  recorded for it while that claim is not made, and with DRAWorkloadResourceClaims off it is a
  non-retryable error (no claim at all);
- a member whose PodGroup does not exist yet errors (getPodGroup) and is retried;
- pods and PodGroups being deleted are left alone;
- a PodGroup's claims carry the `resource.kubernetes.io/pod-claim-name` annotation, as a pod's do
  (handlePodGroupClaim).
"""

from __future__ import annotations

from typing import Any

from gangsched.api.gates import FeatureGates
from gangsched.store import Store
from gangsched.store.claim_controller import sync_claims
from tests.scenarios.harness import load_objects

ANNOTATION = "resource.kubernetes.io/pod-claim-name"


def _template(name: str) -> dict[str, Any]:
    request = {"name": "gpu", "exactly": {"deviceClassName": "gpu.example.com"}}
    return {"apiVersion": "resource.k8s.io/v1", "kind": "ResourceClaimTemplate",
            "metadata": {"name": name, "namespace": "ml"},
            "spec": {"metadata": {"annotations": {"team": "a"}},  # copied onto each claim made from it
                     "spec": {"devices": {"requests": [request]}}}}  # fmt: skip


def _pod(name: str, claims: list[tuple[str, str]], group: str | None = None) -> dict[str, Any]:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "i"}],
        "resourceClaims": [{"name": n, "resourceClaimTemplateName": t} for n, t in claims],
    }
    if group is not None:
        spec["schedulingGroup"] = {"podGroupName": group}
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "ml"}, "spec": spec}


def _group(name: str, claims: list[tuple[str, str]]) -> dict[str, Any]:
    spec = {
        "schedulingPolicy": {"gang": {"minCount": 1}},
        "resourceClaims": [{"name": n, "resourceClaimTemplateName": t} for n, t in claims],
    }
    meta = {"name": name, "namespace": "ml"}
    return {"apiVersion": "scheduling.k8s.io/v1beta1", "kind": "PodGroup", "metadata": meta, "spec": spec}


def _store(*docs: dict[str, Any]) -> Store:
    store = Store(claim_controller=True)
    store.add_all(load_objects(list(docs), "test", FeatureGates()))
    return store


def _statuses(store: Store, pod: str) -> list[tuple[str, str]] | None:
    got = store.get("Pod", ("ml", pod))
    statuses = got.status.resourceClaimStatuses if got.status is not None else None
    return None if statuses is None else [(s.name, s.resourceClaimName) for s in statuses]


def _claims(store: Store) -> dict[str, Any]:
    return {c.metadata.name: c for c in store.list("ResourceClaim")}


def test_a_missing_template_records_nothing_and_the_retry_records_both_sorted() -> None:
    """Pod p asks for `gpu` (template `one`), then `accel` (template `late`, missing). The first pass makes
    p's gpu claim, then fails on accel: p's status stays empty. Once `late` exists, the retry finds the gpu
    claim again (one claim, not two), makes accel's, and records both, sorted by claim name."""
    store = _store(_template("one"), _pod("p", [("gpu", "one"), ("accel", "late")]))
    sync_claims(store, workload_claims=True)
    assert _statuses(store, "p") is None
    first = _claims(store)
    assert [n.rsplit("-", 1)[0] for n in first] == ["p-gpu"]
    # Changed between the passes (as an allocation would change it): the retry uses the claim as it is
    # now (findPodResourceClaim finds it by owner and annotation), it does not make it again.
    next(iter(first.values())).metadata.labels = {"seen": "yes"}
    store.add_all(load_objects([_template("late")], "test", FeatureGates()))
    sync_claims(store, workload_claims=True)
    claims = _claims(store)
    assert sorted(n.rsplit("-", 1)[0] for n in claims) == ["p-accel", "p-gpu"]
    gpu = next(n for n in claims if n.startswith("p-gpu-"))
    accel = next(n for n in claims if n.startswith("p-accel-"))
    assert gpu in first
    assert claims[gpu].metadata.labels == {"seen": "yes"}
    assert _statuses(store, "p") == [("accel", accel), ("gpu", gpu)]
    assert claims[accel].metadata.annotations == {"team": "a", ANNOTATION: "accel"}
    assert [(r.kind, r.name) for r in claims[accel].metadata.ownerReferences] == [("Pod", "p")]


def test_a_podgroups_claim_carries_the_claim_name_annotation_and_serves_its_members() -> None:
    """PodGroup g's claim `gpu` from template `one`: one claim, owned by g, annotated with the claim name
    and the template's annotations; member m's equal claim records g's claim, and m gets none of its own."""
    store = _store(_template("one"), _group("g", [("gpu", "one")]), _pod("m", [("gpu", "one")], "g"))
    sync_claims(store, workload_claims=True)
    claims = _claims(store)
    assert len(claims) == 1
    ((name, claim),) = claims.items()
    assert name.startswith("g-gpu-")
    assert claim.metadata.annotations == {"team": "a", ANNOTATION: "gpu"}
    assert [(r.kind, r.name) for r in claim.metadata.ownerReferences] == [("PodGroup", "g")]
    assert _statuses(store, "m") == [("gpu", name)]


def test_a_member_waits_for_its_podgroups_claim_and_never_makes_its_own() -> None:
    """m's claim equals g's, and g's claim is not made yet (g not synced: only m is handed over, as the
    simulator hands over the objects just created). m records nothing for it and makes no claim of its own;
    its other claim `nic` (its own) is made and recorded. Once g is synced, m's next pass records g's
    claim."""
    store = _store(
        _template("one"), _group("g", [("gpu", "one")]), _pod("m", [("gpu", "one"), ("nic", "one")], "g")
    )
    member = store.get("Pod", ("ml", "m"))
    sync_claims(store, workload_claims=True, objects=[member])
    nic = next(n for n in _claims(store) if n.startswith("m-nic-"))
    assert list(_claims(store)) == [nic]
    assert _statuses(store, "m") == [("nic", nic)]
    sync_claims(store, workload_claims=True)
    gpu = next(n for n in _claims(store) if n.startswith("g-gpu-"))
    assert _statuses(store, "m") == [("gpu", gpu), ("nic", nic)]


def test_a_podgroup_claim_with_the_gate_off_gives_the_member_no_claim() -> None:
    """With DRAWorkloadResourceClaims off, a pod claim equal to its PodGroup's claim is a non-retryable
    error for the pod: no claim is made for it, not even its own `nic`, and nothing is recorded."""
    store = _store(
        _template("one"), _group("g", [("gpu", "one")]), _pod("m", [("nic", "one"), ("gpu", "one")], "g")
    )
    sync_claims(store, workload_claims=False)
    assert [n.rsplit("-", 1)[0] for n in _claims(store)] == ["m-nic"]  # made before the error
    assert _statuses(store, "m") is None


def test_a_member_without_its_podgroup_and_a_pod_being_deleted_get_nothing() -> None:
    """m's PodGroup `g` does not exist (getPodGroup fails, retried later); d is being deleted: neither gets a
    claim. A lone pod beside them does."""
    deleting = _pod("d", [("gpu", "one")])
    deleting["metadata"]["deletionTimestamp"] = "2026-12-02T00:00:00Z"
    deleting["metadata"]["finalizers"] = ["example.com/keep"]
    store = _store(_template("one"), _pod("m", [("gpu", "one")], "g"), deleting, _pod("p", [("gpu", "one")]))
    sync_claims(store, workload_claims=True)
    assert [n.rsplit("-", 1)[0] for n in _claims(store)] == ["p-gpu"]
    assert _statuses(store, "m") is None and _statuses(store, "d") is None
