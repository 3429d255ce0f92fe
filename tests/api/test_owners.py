"""metav1.GetControllerOf / IsControlledBy, with expectations read off
k8s.io/apimachinery/pkg/apis/meta/v1/controller_ref.go (v0.37.2): the controller is the first
ownerReference whose `controller` is true (nil and false both skip it), and IsControlledBy compares only
that reference's UID with the owner's. Names, kinds and other owner references play no part; the kind and
name matter only for objects without UIDs, which the API server never holds (gangsched's reading of files).
"""

from __future__ import annotations

from typing import Any

import pytest
from lightkube.models import core_v1, meta_v1, resource_v1, scheduling_v1beta1

from gangsched.api.owners import controller_of, is_controlled_by
from gangsched.store import Store


def _ref(kind: str, name: str, uid: str = "", controller: bool | None = True) -> meta_v1.OwnerReference:
    return meta_v1.OwnerReference(apiVersion="v1", kind=kind, name=name, uid=uid, controller=controller)


def _pod(name: str = "p", uid: str | None = "uid-p", refs: list[Any] | None = None) -> core_v1.Pod:
    meta = meta_v1.ObjectMeta(name=name, namespace="ns", uid=uid, ownerReferences=refs)
    return core_v1.Pod(apiVersion="v1", kind="Pod", metadata=meta, spec=core_v1.PodSpec(containers=[]))


def _claim(refs: list[Any] | None) -> resource_v1.ResourceClaim:
    meta = meta_v1.ObjectMeta(name="c", namespace="ns", ownerReferences=refs)
    return resource_v1.ResourceClaim(metadata=meta, spec=resource_v1.ResourceClaimSpec())


OWNER = _pod()
NO_UID = _pod(uid=None)


@pytest.mark.parametrize(
    ("refs", "owner", "controller_index", "controlled"),
    [
        pytest.param(None, OWNER, None, False, id="no-owner-references"),
        pytest.param([_ref("Pod", "p", "uid-p", controller=None)], OWNER, None, False, id="ctrl-nil"),
        pytest.param([_ref("Pod", "p", "uid-p", controller=False)], OWNER, None, False, id="ctrl-false"),
        pytest.param([_ref("Pod", "p", "uid-p")], OWNER, 0, True, id="controller-uid-match"),
        # Same kind and name, another UID: an earlier pod of that name (deleted and made again).
        pytest.param([_ref("Pod", "p", "uid-old")], OWNER, 0, False, id="uid-mismatch"),
        # Only the UID is compared: a reference naming another kind and name still matches.
        pytest.param([_ref("Job", "j", "uid-p")], OWNER, 0, True, id="uid-match-other-name"),
        # Several owners: the owner is listed, but not as the controller.
        pytest.param(
            [_ref("Pod", "p", "uid-p", controller=False), _ref("PodGroup", "g", "uid-g")],
            OWNER,
            1,
            False,
            id="owner-not-the-controller",
        ),
        pytest.param(
            [_ref("PodGroup", "g", "uid-g", controller=False), _ref("Pod", "p", "uid-p")],
            OWNER,
            1,
            True,
            id="controller-after-another-owner",
        ),
        # Two controllers (the API server refuses that): GetControllerOfNoCopy takes the first.
        pytest.param(
            [_ref("PodGroup", "g", "uid-g"), _ref("Pod", "p", "uid-p")], OWNER, 0, False, id="first-ctrl"
        ),
        # Without UIDs on either side (objects read from files): kind and name stand in for the UID.
        pytest.param([_ref("Pod", "p")], NO_UID, 0, True, id="no-uids-same-kind-and-name"),
        pytest.param([_ref("Pod", "q")], NO_UID, 0, False, id="no-uids-other-name"),
        pytest.param([_ref("PodGroup", "p")], NO_UID, 0, False, id="no-uids-other-kind"),
        pytest.param([_ref("Pod", "p")], OWNER, 0, False, id="reference-without-uid"),
        pytest.param([_ref("Pod", "p", "uid-p")], NO_UID, 0, False, id="owner-without-uid"),
    ],
)
def test_controller_of_and_is_controlled_by(
    refs: list[Any] | None, owner: Any, controller_index: int | None, controlled: bool
) -> None:
    claim = _claim(refs)
    expected = None if controller_index is None else refs[controller_index]  # type: ignore[index]
    assert controller_of(claim) is expected
    assert is_controlled_by(claim, owner) is controlled


def test_an_object_without_metadata_has_no_controller() -> None:
    assert controller_of(core_v1.Pod()) is None


def test_deleting_a_pod_leaves_the_claim_of_its_podgroup_of_the_same_name() -> None:
    """Pod `train` names the claim that PodGroup `train` controls (made from the group's template), and
    nothing is reserved yet. Deleting the pod deletes none of it upstream: the claim's controller is the
    PodGroup (the resourceclaim controller deletes only claims whose controller is a pod, owningPod, and
    the garbage collector only those whose owners are all gone). Without UIDs, the store once deleted it:
    an owner reference of that name (any kind) counted as the pod's."""
    store = Store(claim_controller=True)
    group = scheduling_v1beta1.PodGroup(
        apiVersion="scheduling.k8s.io/v1beta1",
        kind="PodGroup",
        metadata=meta_v1.ObjectMeta(name="train", namespace="ns"),
        spec=scheduling_v1beta1.PodGroupSpec(
            schedulingPolicy=scheduling_v1beta1.PodGroupSchedulingPolicy(
                gang=scheduling_v1beta1.GangSchedulingPolicy(minCount=1)
            )
        ),
    )
    claim = _claim([_ref("PodGroup", "train")])
    pod = _pod("train", uid=None)
    pod.spec.resourceClaims = [core_v1.PodResourceClaim(name="gpu", resourceClaimName="c")]
    store.add_all([group, claim, pod])
    store.delete("Pod", ("ns", "train"))
    assert store.get("ResourceClaim", ("ns", "c")) is claim


def test_deleting_a_pod_deletes_the_claim_it_controls() -> None:
    """The same claim controlled by the pod (as the resourceclaim controller makes it from the pod's
    template) goes with the pod; so does it with UIDs on both, and not when the UIDs differ (a claim of an
    earlier pod of that name)."""
    for pod_uid, ref_uid, kept in ((None, "", False), ("uid-p", "uid-p", False), ("uid-p", "uid-old", True)):
        store = Store(claim_controller=True)
        claim = _claim([_ref("Pod", "train", ref_uid)])
        pod = _pod("train", uid=pod_uid)
        pod.spec.resourceClaims = [core_v1.PodResourceClaim(name="gpu", resourceClaimName="c")]
        store.add_all([claim, pod])
        store.delete("Pod", ("ns", "train"))
        assert (store.get("ResourceClaim", ("ns", "c")) is not None) is kept, (pod_uid, ref_uid)
