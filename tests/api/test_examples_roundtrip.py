"""examples/valid: valid as a whole, and every object survives load -> dump (to_dict, YAML) -> load."""

from __future__ import annotations

from pathlib import Path
from typing import Any

import pytest
import yaml
from api_helpers import EXAMPLES, run_validate

from gangsched.api import FeatureGates, load_documents, load_paths
from gangsched.api.inputs import read_inputs

VALID = sorted(p for p in (EXAMPLES / "valid").iterdir() if p.suffix in (".yaml", ".json"))
EVERY_KIND = {
    "Namespace",
    "Node",
    "Pod",
    "PodGroup",
    "Workload",
    "CompositePodGroup",
    "Job",
    "PriorityClass",
    "PodDisruptionBudget",
    "StorageClass",
    "PersistentVolume",
    "PersistentVolumeClaim",
    "CSINode",
    "DeviceClass",
    "ResourceSlice",
    "ResourceClaim",
    "ResourceClaimTemplate",
}


def _keys(value: Any, path: str = "") -> set[str]:
    """Every key path in a nested document, list indexes dropped: what field names the document uses."""
    if isinstance(value, dict):
        out = set()
        for k, v in value.items():
            out.add(f"{path}.{k}")
            out |= _keys(v, f"{path}.{k}")
        return out
    if isinstance(value, list):
        return set().union(*(_keys(v, path) for v in value)) if value else set()
    return set()


def test_valid_examples_validate(in_root: Path) -> None:
    result = run_validate("-f", "examples/valid")
    assert result.exit_code == 0, result.stdout
    assert result.stdout == ""


def test_valid_examples_cover_every_kind() -> None:
    result = read_inputs([str(EXAMPLES / "valid")], FeatureGates())
    assert {item.info.kind for item in result.objects} >= EVERY_KIND
    assert result.problems == []


@pytest.mark.parametrize("path", VALID, ids=lambda p: p.name)
def test_round_trip(path: Path) -> None:
    first = load_paths([str(path)])
    assert first.problems == []
    dumped = [item.obj.to_dict() for item in first.objects]
    text = yaml.safe_dump_all(dumped, sort_keys=False)
    second = load_documents(yaml.safe_load_all(text), "dumped")
    assert second.problems == []
    assert [i.obj for i in second.objects] == [i.obj for i in first.objects]
    # Dumped YAML speaks upstream's field names only: exactly the keys the input used.
    raw = [d for d in yaml.safe_load_all(path.read_text()) if d is not None]
    items = [i for d in raw for i in (d.get("items", [d]) if d.get("kind", "").endswith("List") else [d])]
    for original, again in zip(items, yaml.safe_load_all(text), strict=True):
        assert _keys(again) == _keys(original)


def test_generic_workload_off_still_reads_workload_objects(in_root: Path) -> None:
    """`--feature-gates GenericWorkload=false` means classic pod-by-pod scheduling of the SAME inputs, so
    workload objects are read (and ignored by the scheduler), not refused field by field."""
    result = run_validate("-f", "examples/valid", "--feature-gates", "GenericWorkload=false")
    assert result.exit_code == 0, result.stdout


def test_a_finer_gate_off_refuses_its_fields(in_root: Path) -> None:
    result = run_validate("-f", "examples/valid", "--feature-gates", "TopologyAwareWorkloadScheduling=false")
    assert result.exit_code == 1
    lines = result.stdout.splitlines()
    assert lines and all(": Forbidden: feature gate " in line for line in lines)
    assert any("TopologyAwareWorkloadScheduling is disabled" in line for line in lines)
    # CompositePodGroup depends on it and follows it off.
    assert any("CompositePodGroup ml/spark-train-replica: kind: Forbidden" in line for line in lines)
