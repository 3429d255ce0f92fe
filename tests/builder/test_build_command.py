"""`gangsched build`: what it prints passes `gangsched validate`, round-trips, and refuses bad input."""

from __future__ import annotations

import json
from pathlib import Path

import pytest
import yaml
from click.testing import CliRunner

from gangsched.cli import main

ROOT = Path(__file__).resolve().parents[2]
JOBS = sorted((ROOT / "examples" / "jobs").glob("*.yaml"))


def run(*args: str, stdin: str | None = None) -> tuple[int, str, str]:
    result = CliRunner().invoke(main, list(args), input=stdin)
    return result.exit_code, result.stdout, result.stderr


@pytest.mark.parametrize("path", JOBS, ids=lambda p: p.name)
def test_build_output_passes_validate_and_round_trips(path: Path) -> None:
    code, text, err = run("build", "-f", str(path))
    assert code == 0, err
    code, _, err = run("validate", "-f", "-", stdin=text)
    assert code == 0, err
    # Feeding the output back changes nothing: expanded Jobs are not expanded again.
    code, again, err = run("build", "-f", "-", stdin=text)
    assert (code, again) == (0, text), err


@pytest.mark.parametrize("path", JOBS, ids=lambda p: p.name)
def test_json_output_is_a_list_that_validates(path: Path) -> None:
    code, text, _ = run("build", "-f", str(path), "-o", "json")
    assert code == 0
    doc = json.loads(text)
    assert (doc["apiVersion"], doc["kind"]) == ("v1", "List")
    code, _, err = run("validate", "-f", "-", stdin=text)
    assert code == 0, err
    yaml_docs = list(yaml.safe_load_all(run("build", "-f", str(path))[1]))
    assert doc["items"] == yaml_docs


def test_expected_objects_for_the_examples() -> None:
    kinds = {}
    for path in JOBS:
        text = run("build", "-f", str(path))[1]
        kinds[path.name] = [d["kind"] for d in yaml.safe_load_all(text)]
    assert kinds == {
        "gang-job.yaml": ["Job", "Workload", "PodGroup"] + ["Pod"] * 6,
        "indexed-job.yaml": ["Job", "Workload", "PodGroup"] + ["Pod"] * 4,
        "jobset-workers-driver.yaml": [
            "JobSet",
            "Workload",
            "CompositePodGroup",
            "PodGroup",
            "PodGroup",
            "Job",
            "Job",
        ]
        + ["Pod"] * 5,
    }


def test_other_objects_pass_through_in_order() -> None:
    node = "apiVersion: v1\nkind: Node\nmetadata: {name: n1}\n"
    job = (ROOT / "examples" / "jobs" / "gang-job.yaml").read_text()
    code, text, _ = run("build", "-f", "-", stdin=node + "---\n" + job + "---\n" + node.replace("n1", "n2"))
    assert code == 0
    names = [(d["kind"], d["metadata"]["name"]) for d in yaml.safe_load_all(text)]
    assert names[0] == ("Node", "n1") and names[-1] == ("Node", "n2") and names[1] == ("Job", "resnet")


def test_bad_scheduling_is_refused_with_file_object_and_field(tmp_path: Path) -> None:
    bad = tmp_path / "bad.yaml"
    bad.write_text(
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j, namespace: ml}\n"
        "spec:\n  parallelism: 2\n  scheduling: {schedulingPolicy: {basic: {}}, disruptionMode: {all: {}}}\n"
        "  template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}\n"
    )
    code, text, err = run("build", "-f", str(bad))
    assert code == 1 and text == ""
    assert err.splitlines() == [
        f'{bad}: Job ml/j: spec.scheduling.disruptionMode: Invalid value: "": '
        "the disruptionMode `all` is not supported with the Basic scheduling policy"
    ]


def test_gate_off_prints_classic_pods() -> None:
    job = (
        "apiVersion: batch/v1\nkind: Job\nmetadata: {name: j}\nspec:\n  parallelism: 3\n"
        "  template: {spec: {restartPolicy: Never, containers: [{name: c, image: i}]}}\n"
    )
    code, text, err = run("build", "-f", "-", "--feature-gates", "WorkloadWithJob=false", stdin=job)
    assert code == 0, err
    docs = list(yaml.safe_load_all(text))
    assert [d["kind"] for d in docs] == ["Job"] + ["Pod"] * 3
    assert all("schedulingGroup" not in d["spec"] for d in docs[1:])


def test_what_the_expansion_creates_is_validated_too(tmp_path: Path) -> None:
    """A JobSet's roles are plain dicts until expanded: their mistakes surface on the created objects,
    under the JobSet's file, and nothing is printed."""
    bad = tmp_path / "jobset.yaml"
    bad.write_text(
        "apiVersion: jobset.x-k8s.io/v1alpha2\nkind: JobSet\nmetadata: {name: t, namespace: default}\n"
        "spec:\n  replicatedJobs:\n  - name: w\n    template: {spec: {parallelism: 1, template: {spec: {\n"
        "      restartPolicy: Never,\n"
        '      containers: [{name: c, image: i, resources: {requests: {cpu: "-1"}}}]}}}}\n'
    )
    code, text, err = run("build", "-f", str(bad))
    assert (code, text) == (1, "")
    lines = err.splitlines()
    assert [line.split(": ")[:2] for line in lines] == [
        [str(bad), "Job default/t-w-0"],
        [str(bad), lines[1].split(": ")[1]],
    ]
    assert lines[1].split(": ")[1].startswith("Pod default/t-w-0-")
    assert all("requests[cpu]" in line for line in lines)
