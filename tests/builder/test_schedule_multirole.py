"""A multi-role job (JobSet: 4 workers + 1 driver, one CPU each) is admitted whole or not at all."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
from click.testing import CliRunner

from gangsched.cli import main

JOBSET = """apiVersion: jobset.x-k8s.io/v1alpha2
kind: JobSet
metadata: {name: train, namespace: default}
spec:
  replicatedJobs:
  - name: workers
    template:
      spec:
        parallelism: 4
        template:
          spec:
            restartPolicy: Never
            containers: [{name: c, image: w, resources: {requests: {cpu: "1"}}}]
  - name: driver
    template:
      spec:
        parallelism: 1
        template:
          spec:
            restartPolicy: Never
            containers: [{name: c, image: d, resources: {requests: {cpu: "1"}}}]
"""


def nodes(*cpus: int) -> str:
    return "---\n".join(
        f"apiVersion: v1\nkind: Node\nmetadata: {{name: n{i}}}\n"
        f'status: {{allocatable: {{cpu: "{cpu}", memory: 8Gi, pods: "110"}}}}\n'
        for i, cpu in enumerate(cpus, 1)
    )


def schedule(tmp_path: Path, *cpus: int) -> dict[str, Any]:
    built = CliRunner().invoke(main, ["build", "-f", "-"], input=JOBSET)
    assert built.exit_code == 0, built.stderr
    (tmp_path / "nodes.yaml").write_text(nodes(*cpus))
    (tmp_path / "built.yaml").write_text(built.stdout)
    args = ["schedule", "-f", str(tmp_path / "nodes.yaml"), "-f", str(tmp_path / "built.yaml"), "-o", "json"]
    result = CliRunner().invoke(main, args)
    assert result.exit_code == 0, result.stderr
    state: dict[str, Any] = json.loads(result.stdout)
    return state


def roles_placed(state: dict[str, Any]) -> dict[str, int]:
    placed = {"workers": 0, "driver": 0}
    for pod in state["pods"]:
        if pod["nodeName"] is not None:
            placed["workers" if "-workers-" in pod["name"] else "driver"] += 1
    return placed


@pytest.mark.parametrize(
    ("cpus", "placed", "status"),
    [
        ((3, 2), {"workers": 4, "driver": 1}, "True"),
        # Room for the 4 workers but not the driver: the workers must not start without it.
        ((2, 2), {"workers": 0, "driver": 0}, "False"),
        ((5,), {"workers": 4, "driver": 1}, "True"),
    ],
    ids=["fits-across-nodes", "one-cpu-short", "fits-on-one-node"],
)
def test_multi_role_job_is_admitted_whole_or_not_at_all(
    tmp_path: Path, cpus: tuple[int, ...], placed: dict[str, int], status: str
) -> None:
    state = schedule(tmp_path, *cpus)
    assert roles_placed(state) == placed
    [root] = state["compositePodGroups"]
    [condition] = root["conditions"]
    assert (condition["type"], condition["status"]) == ("CompositePodGroupInitiallyScheduled", status)
