"""--feature-gates parsing and the dependencies between the six gates."""

from __future__ import annotations

import pytest

from gangsched.api.gates import GATE_DEPENDENCIES, GATE_NAMES, FeatureGateError, FeatureGates


def test_all_six_on_by_default() -> None:
    assert FeatureGates().as_dict() == dict.fromkeys(GATE_NAMES, True)
    assert FeatureGates.parse("").as_dict() == dict.fromkeys(GATE_NAMES, True)


def test_upstream_names_and_dependencies() -> None:
    assert list(GATE_NAMES) == [
        "GenericWorkload",
        "DRAWorkloadResourceClaims",
        "TopologyAwareWorkloadScheduling",
        "CompositePodGroup",
        "WorkloadWithJob",
        "PodGroupPreemptionPolicy",
    ]
    assert GATE_DEPENDENCIES["CompositePodGroup"] == ("GenericWorkload", "TopologyAwareWorkloadScheduling")


def test_generic_workload_off_takes_dependents_with_it() -> None:
    gates = FeatureGates.parse("GenericWorkload=false")
    assert not any(gates.as_dict().values())


def test_topology_off_takes_composite_with_it_only() -> None:
    gates = FeatureGates.parse("TopologyAwareWorkloadScheduling=false")
    assert gates.as_dict() == {
        "GenericWorkload": True,
        "DRAWorkloadResourceClaims": True,
        "TopologyAwareWorkloadScheduling": False,
        "CompositePodGroup": False,
        "WorkloadWithJob": True,
        "PodGroupPreemptionPolicy": True,
    }


@pytest.mark.parametrize(
    ("text", "message"),
    [
        (
            "GenericWorkload=false,CompositePodGroup=true",
            "feature gate CompositePodGroup depends on GenericWorkload",
        ),
        (
            "TopologyAwareWorkloadScheduling=false,CompositePodGroup=true",
            "depends on TopologyAwareWorkloadScheduling",
        ),
        ("Nope=true", "unrecognized feature gate: Nope"),
        ("GenericWorkload", "missing bool value for GenericWorkload"),
        ("GenericWorkload=maybe", 'parsing "maybe": invalid syntax'),
    ],
)
def test_refused(text: str, message: str) -> None:
    with pytest.raises(FeatureGateError, match=message):
        FeatureGates.parse(text)


def test_case_and_spaces_as_kubernetes() -> None:
    gates = FeatureGates.parse(" WorkloadWithJob=False , PodGroupPreemptionPolicy=TRUE ")
    assert not gates.enabled("WorkloadWithJob")
    assert gates.enabled("PodGroupPreemptionPolicy")
