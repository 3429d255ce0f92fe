"""`gangsched schedule` through click, against DESIGN.md's command-line contract."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner
from hypothesis import example, given
from hypothesis import strategies as st

from gangsched.api.gates import FeatureGates
from gangsched.builder.command import expanded_inputs
from gangsched.cli import main
from gangsched.report.schedule_output import FLOAT_FREE_ROWS, json_bytes, json_document
from gangsched.report.schedule_output import as_json as as_report
from gangsched.schedule import schedule_objects
from gangsched.scheduler.decision import Notice

ROOT = Path(__file__).resolve().parent.parent
EIGHT_GPU = "examples/eight-gpu/eight-gpu.yaml"
INVALID = Path("examples/invalid")
WIDE = {"COLUMNS": "250"}  # rich wraps table cells to the terminal width

POD_KEYS = {"namespace", "name", "nodeName", "nominatedNodeName", "reason", "message"}
GROUP_KEYS = {"namespace", "name", "conditions"}
CONDITION_KEYS = {"type", "status", "reason", "message"}


@pytest.fixture(autouse=True)
def _from_repo_root(monkeypatch: pytest.MonkeyPatch) -> None:
    monkeypatch.chdir(ROOT)  # problem lines name files as given, relative to where the command runs


def schedule(*args: str, stdin: str | None = None) -> Any:
    return CliRunner().invoke(main, ["schedule", *args], input=stdin, env=WIDE)


def as_json(*args: str, stdin: str | None = None) -> dict[str, Any]:
    result = schedule(*args, "-o", "json", stdin=stdin)
    assert result.exit_code == 0, result.output
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def placements(out: dict[str, Any]) -> dict[str, str | None]:
    return {f"{p['namespace']}/{p['name']}": p["nodeName"] for p in out["pods"]}


def test_json_has_the_contract_keys_and_the_gang_decision() -> None:
    out = as_json("-f", EIGHT_GPU)
    assert set(out) == {
        "pods",
        "podGroups",
        "compositePodGroups",
        "evictions",
        "events",
        "volumeBindings",
        "claims",
    }
    assert all(set(p) == POD_KEYS for p in out["pods"])
    assert all(set(g) == GROUP_KEYS for g in out["podGroups"])
    assert all(set(c) == CONDITION_KEYS for g in out["podGroups"] for c in g["conditions"])
    assert all(set(e) == {"type", "reason", "object", "message"} for e in out["events"])
    assert out["evictions"] == [] and out["compositePodGroups"] == []
    bound = [p for p in out["pods"] if p["nodeName"]]
    assert sorted({p["name"].rsplit("-", 2)[0] for p in bound}) == ["train-a"] and len(bound) == 6
    waiting = [p for p in out["pods"] if not p["nodeName"]]
    assert len(waiting) == 6 and all(p["reason"] == "Unschedulable" and p["message"] for p in waiting)
    conditions = {g["name"]: g["conditions"][0] for g in out["podGroups"]}
    assert (conditions["train-a"]["status"], conditions["train-a"]["reason"]) == ("True", "Scheduled")
    assert (conditions["train-b"]["status"], conditions["train-b"]["reason"]) == ("False", "Unschedulable")
    assert sum(e["reason"] == "Scheduled" for e in out["events"]) == 6


def test_generic_workload_off_schedules_pod_by_pod() -> None:
    out = as_json("-f", EIGHT_GPU, "--feature-gates", "GenericWorkload=false")
    bound = [p["name"] for p in out["pods"] if p["nodeName"]]
    assert (
        sum(n.startswith("train-a") for n in bound) == 4 and sum(n.startswith("train-b") for n in bound) == 4
    )


def test_policy_pod_by_pod_splits_like_the_gate_off_and_bad_names_exit_1() -> None:
    out = as_json("-f", EIGHT_GPU, "--policy", "pod-by-pod")
    bound = [p["name"] for p in out["pods"] if p["nodeName"]]
    assert (
        sum(n.startswith("train-a") for n in bound) == 4 and sum(n.startswith("train-b") for n in bound) == 4
    )
    gang = as_json("-f", EIGHT_GPU, "--policy", "gang-strict-fifo")
    assert sorted(p["name"] for p in gang["pods"] if p["nodeName"]) == [
        f"train-a-worker-{i}" for i in range(6)
    ]
    result = schedule("-f", EIGHT_GPU, "--policy", "fifo")
    assert result.exit_code == 1 and "'fifo' is not one of 'gang', 'gang-strict-fifo'" in result.output


def test_an_option_out_of_its_range_is_bad_input_exit_1() -> None:
    args = ["simulate", "-f", EIGHT_GPU, "--nodes", "2", "--gpus-per-node", "8"]
    args += ["--termination-seconds", "-5"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 1, result.output
    assert "Invalid value for '--termination-seconds': -5.0 is not in the range x>=0." in result.output


def test_yaml_output_fed_back_gives_the_same_placements() -> None:
    first = schedule("-f", EIGHT_GPU, "-o", "yaml")
    assert first.exit_code == 0, first.output
    again = as_json("-f", "-", stdin=first.stdout)
    assert placements(again) == placements(as_json("-f", EIGHT_GPU))
    conditions = {g["name"]: g["conditions"][0]["reason"] for g in again["podGroups"]}
    assert conditions == {"train-a": "Scheduled", "train-b": "Unschedulable"}


def test_table_lists_pods_with_their_nodes_and_groups() -> None:
    result = schedule("-f", EIGHT_GPU, "-o", "table")
    assert result.exit_code == 0, result.output
    lines = result.stdout.splitlines()
    for key, node in placements(as_json("-f", EIGHT_GPU)).items():
        row = next(line for line in lines if f" {key.split('/')[1]} " in line)
        assert (node or " - ") in row, row
    assert any("train-b" in line and "Unschedulable" in line for line in lines)


@pytest.mark.parametrize("bad", ["missing-name", "job-mincount-zero", "job-spec-incomplete"])
def test_invalid_input_exits_1_with_one_line_per_problem_and_schedules_nothing(bad: str) -> None:
    result = schedule("-f", EIGHT_GPU, "-f", str(INVALID / f"{bad}.yaml"), "-o", "json")
    assert result.exit_code == 1
    assert result.stdout == ""  # nothing scheduled, nothing printed as a result
    expected = (INVALID / f"{bad}.expected").read_text().splitlines()
    assert result.stderr.splitlines() == expected


def test_two_invalid_files_give_every_problem() -> None:
    result = schedule("-f", str(INVALID / "missing-name.yaml"), "-f", str(INVALID / "job-mincount-zero.yaml"))
    assert result.exit_code == 1 and result.stdout == ""
    expected = [
        *(INVALID / "missing-name.expected").read_text().splitlines(),
        *(INVALID / "job-mincount-zero.expected").read_text().splitlines(),
    ]
    assert result.stderr.splitlines() == expected


def test_bad_feature_gates_exit_1_with_the_reason() -> None:
    for gates, reason in [
        ("Foo=true", "unrecognized feature gate: Foo"),
        ("GenericWorkload=false,CompositePodGroup=true", "feature gate CompositePodGroup depends on"),
        ("GenericWorkload=maybe", "invalid value of GenericWorkload=maybe"),
    ]:
        result = CliRunner().invoke(main, ["schedule", "-f", "examples/eight-gpu", "--feature-gates", gates])
        assert result.exit_code == 1, result.output
        assert reason in result.output


def test_json_shows_volume_bindings_and_claim_allocations() -> None:
    """examples/valid: the WaitForFirstConsumer claim binds to the local PV on gpu-a1 (the only PV of its
    class), which takes the pod there, where the default class's zone-a topology also lets the other claim
    be provisioned; the claim made from the GPU template gets both GPUs of gpu-b1 (same model), reserved for
    its pod."""
    out = as_json("-f", str(ROOT / "examples" / "valid"))
    assert out["volumeBindings"] == [
        {"pvc": "ml/scratch", "pv": "local-a1-0", "node": "gpu-a1"},
        {"pvc": "ml/checkpoints", "pv": None, "node": "gpu-a1"},
    ]
    claims = {c["name"]: c for c in out["claims"]}
    (generated,) = [name for name in claims if name.startswith("trainer-with-gpus-gpus-")]
    claim = claims[generated]
    results = claim["allocation"]["devices"]["results"]
    assert [(r["request"], r["pool"], r["device"]) for r in results] == [
        ("gpus", "gpu-b1", "gpu-0"),
        ("gpus", "gpu-b1", "gpu-1"),
    ]
    assert claim["reservedFor"] == [{"resource": "pods", "name": "trainer-with-gpus", "uid": ""}]
    assert claims["shared-gpu"]["allocation"] is None  # no pod uses it
    assert placements(out)["ml/trainer-with-gpus"] == "gpu-b1"


EMPTY_CLAIM_SPECS = """\
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: none, namespace: default}
spec: null
---
apiVersion: resource.k8s.io/v1
kind: ResourceClaimTemplate
metadata: {name: inner-none, namespace: default}
spec: {spec: null}
---
apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "4", memory: 8Gi, pods: "110"}}
---
apiVersion: v1
kind: Pod
metadata: {name: p, namespace: default}
spec:
  containers: [{name: c, image: i}]
  resourceClaims:
  - {name: a, resourceClaimTemplateName: none}
  - {name: b, resourceClaimTemplateName: inner-none}
"""


def test_claim_templates_with_a_null_spec_are_empty_claims() -> None:
    """The API server decodes `spec: null` as the zero value: a claim with no requests, valid, allocated with
    no devices (a crash once, found by the fuzz tests)."""
    assert CliRunner().invoke(main, ["validate", "-f", "-"], input=EMPTY_CLAIM_SPECS).exit_code == 0
    out = as_json("-f", "-", stdin=EMPTY_CLAIM_SPECS)
    assert placements(out) == {"default/p": "n1"}
    assert sorted(c["allocation"]["devices"]["results"] == [] for c in out["claims"]) == [True, True]


json_values = st.recursive(
    st.none()
    | st.booleans()
    | st.integers(-(2**63), 2**63 - 1)
    | st.floats(allow_nan=False, allow_infinity=False)
    | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(doc=json_values)
@example(doc={"\x7f": "a\x7fb"})  # ASCII that json.dumps escapes and msgspec does not
def test_json_output_is_the_indented_json_of_the_standard_library(doc: Any) -> None:
    assert json_bytes(doc) == json.dumps(doc, indent=2).encode()


float_free_values = st.recursive(
    st.none() | st.booleans() | st.integers(-(2**63), 2**63 - 1) | st.text(),
    lambda inner: st.lists(inner, max_size=4) | st.dictionaries(st.text(max_size=8), inner, max_size=4),
    max_leaves=20,
)


@given(rows=float_free_values, claims=json_values)
@example(rows=["a"], claims=[{"count": 1e16}])  # a float where one may be: json.dumps's notation, 1e+16
def test_json_output_reads_back_only_the_rows_that_may_hold_floats(rows: Any, claims: Any) -> None:
    doc = {"pods": rows, "claims": claims}
    assert json_bytes(doc, float_free=FLOAT_FREE_ROWS) == json.dumps(doc, indent=2).encode()


@pytest.mark.parametrize("path", [EIGHT_GPU, "examples/valid"])
def test_the_rows_said_to_be_float_free_hold_no_float(path: str) -> None:
    """json_bytes reads back only the claims for floats: every other row of the report is strings and None."""
    out = as_json("-f", path)
    assert FLOAT_FREE_ROWS | {"claims"} == set(out)

    def leaves(value: Any) -> list[Any]:
        if isinstance(value, dict):
            return [leaf for v in value.values() for leaf in leaves(v)]
        if isinstance(value, list):
            return [leaf for v in value for leaf in leaves(v)]
        return [value]

    found = {type(leaf).__name__ for key in FLOAT_FREE_ROWS for leaf in leaves(out[key])}
    assert found <= {"str", "NoneType"}, found
    assert "str" in found


def test_problems_of_objects_a_job_creates_name_the_jobs_file(tmp_path: Path) -> None:
    """The Workload, PodGroup and pods a Job expands into are defaulted as the API server defaults what a
    controller creates; when that fails (a priorityClassName no input defines), each line names the file the
    Job came from, as every other problem does."""
    manifest = tmp_path / "job.yaml"
    manifest.write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: train, namespace: ml}\n"
        "spec:\n  parallelism: 2\n  scheduling: {schedulingPolicy: {gang: {}}}\n"
        "  template:\n    spec:\n      restartPolicy: Never\n      priorityClassName: missing\n"
        "      containers: [{name: c, image: x}]\n"
    )
    result = schedule("-f", str(manifest), "-o", "json")
    assert result.exit_code == 1 and result.stdout == ""
    lines = result.stderr.splitlines()
    kinds = sorted({line.split(": ")[1].split(" ")[0] for line in lines})
    assert kinds == ["Pod", "PodGroup", "Workload"]  # 2 pods, their PodGroup, the Workload
    assert len(lines) == 4
    assert all(line.startswith(f"{manifest}: ") and 'Not found: "missing"' in line for line in lines), lines


def test_null_specs_of_device_classes_and_claims_are_empty_ones() -> None:
    """The API server stores a DeviceClass or ResourceClaim with `spec: null` as one with an empty spec (a
    struct in Go): a class with no selectors takes any device, a claim with no requests is allocated with no
    devices. schedule used to fail with a traceback on such a class. Pod p's three claims: `empty` (named,
    no spec), one from the template `nothing` (no spec) and one from `one`, which asks the spec-less class for
    a device: node n1's gpu-0."""
    docs = [
        "{apiVersion: v1, kind: Node, metadata: {name: n1}, status: {allocatable: {cpu: '8', pods: '110'}}}",
        "{apiVersion: resource.k8s.io/v1, kind: DeviceClass, metadata: {name: gpu.example.com}, spec: null}",
        "{apiVersion: resource.k8s.io/v1, kind: ResourceSlice, metadata: {name: n1-gpus}, spec: {driver:"
        " gpu.example.com, nodeName: n1, pool: {name: n1, generation: 1, resourceSliceCount: 1},"
        " devices: [{name: gpu-0}]}}",
        "{apiVersion: resource.k8s.io/v1, kind: ResourceClaim, metadata: {name: empty}, spec: null}",
        "{apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate, metadata: {name: nothing},"
        " spec: null}",
        "{apiVersion: resource.k8s.io/v1, kind: ResourceClaimTemplate, metadata: {name: one}, spec: {spec:"
        " {devices: {requests: [{name: gpu, exactly: {deviceClassName: gpu.example.com}}]}}}}",
        "{apiVersion: v1, kind: Pod, metadata: {name: p}, spec: {containers: [{name: c, image: i,"
        " resources: {claims: [{name: a}, {name: b}, {name: g}]}}], resourceClaims: [{name: a,"
        " resourceClaimName: empty}, {name: b, resourceClaimTemplateName: nothing},"
        " {name: g, resourceClaimTemplateName: one}]}}",
    ]
    out = as_json("-f", "-", stdin="\n---\n".join(docs))
    assert placements(out) == {"default/p": "n1"}
    devices = {
        c["name"][:4]: [r["device"] for r in c["allocation"]["devices"]["results"]] for c in out["claims"]
    }
    assert devices == {"empt": [], "p-b-": [], "p-g-": ["gpu-0"]}


@pytest.mark.parametrize("path", [EIGHT_GPU, "examples/valid"])
def test_the_document_written_is_the_report_as_dicts(path: str) -> None:
    """`schedule -o json` writes json_document, whose rows are Structs: the same text as the plain report."""
    gates = FeatureGates()
    objects, problems = expanded_inputs([path], gates)
    assert not problems
    store = schedule_objects(objects, gates)
    report = as_report(store)
    assert (
        json_bytes(json_document(store), float_free=FLOAT_FREE_ROWS) == json.dumps(report, indent=2).encode()
    )
    store.events.append(Notice("Normal", "Scheduled", "Pod default/é", "Successfully assigned é to ü"))
    # non-ASCII text: written by the standard library, Structs and all
    assert (
        json_bytes(json_document(store), float_free=FLOAT_FREE_ROWS)
        == json.dumps(as_report(store), indent=2).encode()
    )
