"""Defaulting as the API server and its Priority admission plugin do it, before validation."""

from __future__ import annotations

from typing import Any

from gangsched.api import load_documents
from gangsched.api.defaults import apply_defaults

CLASSES = [
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "high"},
        "value": 1000,
    },
    {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "polite"},
        "value": 50,
        "preemptionPolicy": "Never",
    },
]


def _defaulted(*docs: dict[str, Any]) -> tuple[list[Any], list[str]]:
    result = load_documents([*CLASSES, *docs], "in.yaml")
    assert result.problems == []
    objects = [i.obj for i in result.objects]
    errors = [str(e) for _, e in apply_defaults(objects)]
    return objects[len(CLASSES) :], errors


def _pod(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "Pod",
        "metadata": {"name": "p"},
        "spec": {"containers": [{"name": "c"}], **spec},
    }


def _group(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "PodGroup",
        "metadata": {"name": "g", "namespace": "ml"},
        "spec": {"schedulingPolicy": {"gang": {"minCount": 2}}, **spec},
    }


def test_pod_defaults() -> None:
    [pod], errors = _defaulted(_pod())
    assert errors == []
    assert pod.metadata.namespace == "default"
    assert pod.spec.schedulerName == "default-scheduler"
    assert (pod.spec.priority, pod.spec.preemptionPolicy) == (0, "PreemptLowerPriority")


def test_pod_priority_and_policy_from_its_class() -> None:
    [high, polite], _ = _defaulted(_pod(priorityClassName="high"), _pod(priorityClassName="polite"))
    assert (high.spec.priority, high.spec.preemptionPolicy) == (1000, "PreemptLowerPriority")
    assert (polite.spec.priority, polite.spec.preemptionPolicy) == (50, "Never")


def test_system_classes_exist_without_being_loaded() -> None:
    [pod], errors = _defaulted(_pod(priorityClassName="system-node-critical"))
    assert errors == []
    assert pod.spec.priority == 2000001000


def test_missing_class_is_a_not_found_error() -> None:
    [_], errors = _defaulted(_pod(priorityClassName="gold"))
    assert errors == ['spec.priorityClassName: Not found: "gold"']


def test_group_defaults_keep_the_namespace_given() -> None:
    [group], errors = _defaulted(_group())
    assert errors == []
    assert group.metadata.namespace == "ml"
    assert group.spec.disruptionMode.single == {}
    assert group.spec.disruptionMode.all is None
    assert (group.spec.priority, group.spec.preemptionPolicy) == (0, "PreemptLowerPriority")


def test_group_priority_from_class_and_explicit_values_kept() -> None:
    [from_class, explicit], _ = _defaulted(
        _group(priorityClassName="polite"),
        _group(priority=7, preemptionPolicy="Never", disruptionMode={"all": {}}),
    )
    assert (from_class.spec.priority, from_class.spec.preemptionPolicy) == (50, "Never")
    assert (explicit.spec.priority, explicit.spec.preemptionPolicy) == (7, "Never")
    assert explicit.spec.disruptionMode.all == {}


def test_global_default_class_applies_to_pods_without_a_class() -> None:
    default_class = {
        "apiVersion": "scheduling.k8s.io/v1",
        "kind": "PriorityClass",
        "metadata": {"name": "everyone"},
        "value": 5,
        "globalDefault": True,
    }
    [_, pod], _ = _defaulted(default_class, _pod())
    assert pod.spec.priority == 5


def test_workload_templates_stored_as_written() -> None:
    """The API server defaults none of a Workload template's fields (a live test checks it); the PodGroups
    made from the templates are defaulted themselves. Only a class that does not exist is reported."""
    workload = {
        "apiVersion": "scheduling.k8s.io/v1beta1",
        "kind": "Workload",
        "metadata": {"name": "w"},
        "spec": {
            "compositePodGroupTemplates": [
                {
                    "name": "root",
                    "priorityClassName": "high",
                    "schedulingPolicy": {"basic": {}},
                    "podGroupTemplates": [
                        {"name": "leaf", "priorityClassName": "high", "schedulingPolicy": {"basic": {}}}
                    ],
                }
            ]
        },
    }
    [w], errors = _defaulted(workload)
    assert errors == []
    root = w.spec.compositePodGroupTemplates[0]
    leaf = root.podGroupTemplates[0]
    assert (root.priority, leaf.priority) == (None, None)
    assert (root.disruptionMode, leaf.disruptionMode, leaf.preemptionPolicy) == (None, None, None)
    leaf_doc = workload["spec"]["compositePodGroupTemplates"][0]["podGroupTemplates"][0]  # type: ignore[index]
    leaf_doc["priorityClassName"] = "missing"
    _, errors = _defaulted(workload)
    assert [str(e) for e in errors] == [
        'spec.compositePodGroupTemplates[0].podGroupTemplates[0].priorityClassName: Not found: "missing"'
    ]


def test_job_defaults() -> None:
    job = {
        "apiVersion": "batch/v1",
        "kind": "Job",
        "metadata": {"name": "j"},
        "spec": {"template": {"spec": {"containers": [{"name": "c"}]}}},
    }
    [j], _ = _defaulted(job)
    assert (j.spec.parallelism, j.spec.completionMode, j.spec.backoffLimit) == (1, "NonIndexed", 6)


def _class(name: str, default: str | None, created: str) -> dict[str, Any]:
    annotations = {"storageclass.kubernetes.io/is-default-class": default} if default else {}
    return {
        "apiVersion": "storage.k8s.io/v1",
        "kind": "StorageClass",
        "metadata": {"name": name, "annotations": annotations, "creationTimestamp": created},
        "provisioner": "csi.example.com",
    }


def _claim(**spec: Any) -> dict[str, Any]:
    return {
        "apiVersion": "v1",
        "kind": "PersistentVolumeClaim",
        "metadata": {"name": "data"},
        "spec": {"accessModes": ["ReadWriteOnce"], "resources": {"requests": {"storage": "1Gi"}}, **spec},
    }


def test_claim_without_class_gets_the_newest_default_class() -> None:
    """DefaultStorageClass admission: of several default classes the newest wins; "" opts out; a class
    without the annotation (or with "false") is never the default."""
    objs, errors = _defaulted(
        _class("old", "true", "2026-01-01T00:00:00Z"),
        _class("new", "true", "2026-02-01T00:00:00Z"),
        _class("plain", "false", "2026-03-01T00:00:00Z"),
        _claim(),
        _claim(storageClassName=""),
    )
    assert errors == []
    _, _, sc_plain, claim, opted_out = objs
    assert claim.spec.storageClassName == "new"
    assert opted_out.spec.storageClassName == ""
    assert (sc_plain.volumeBindingMode, sc_plain.reclaimPolicy) == ("Immediate", "Delete")
    assert claim.spec.volumeMode == "Filesystem"


def test_device_requests_default_to_one_device() -> None:
    """SetDefaults_ExactDeviceRequest / SetDefaults_DeviceSubRequest: ExactCount with count 1; All keeps
    no count."""
    claim = {
        "apiVersion": "resource.k8s.io/v1",
        "kind": "ResourceClaim",
        "metadata": {"name": "c"},
        "spec": {
            "devices": {
                "requests": [
                    {"name": "a", "exactly": {"deviceClassName": "gpu"}},
                    {"name": "b", "exactly": {"deviceClassName": "gpu", "allocationMode": "All"}},
                    {"name": "c", "firstAvailable": [{"name": "x", "deviceClassName": "gpu"}]},
                ]
            }
        },
    }
    (obj,), errors = _defaulted(claim)
    assert errors == []
    a, b, c = obj.spec.devices.requests
    assert (a.exactly.allocationMode, a.exactly.count) == ("ExactCount", 1)
    assert (b.exactly.allocationMode, b.exactly.count) == ("All", None)
    assert (c.firstAvailable[0].allocationMode, c.firstAvailable[0].count) == ("ExactCount", 1)


def test_replication_controller_without_selector_selects_its_template_labels() -> None:
    # v1 SetDefaults_ReplicationController: an empty selector becomes the template's labels; a given one
    # stays.
    template = {"metadata": {"labels": {"app": "web", "tier": "fe"}}, "spec": {"containers": []}}
    objects, errors = _defaulted(
        {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": "a"},
            "spec": {"template": template},
        },
        {
            "apiVersion": "v1",
            "kind": "ReplicationController",
            "metadata": {"name": "b"},
            "spec": {"selector": {"app": "web"}, "template": template},
        },
    )
    assert errors == []
    a, b = objects[-2:]
    assert a.spec.selector == {"app": "web", "tier": "fe"}
    assert b.spec.selector == {"app": "web"}
    assert a.metadata.namespace == "default"
