"""Expanded Jobs through the scheduler: what `gangsched build` prints is what `gangsched schedule` runs.

One node with 3 CPUs; a gang Job of 4 one-CPU pods waits whole, and a minCount decrease lets it start.
"""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

from click.testing import CliRunner
from lightkube.models import batch_v1, scheduling_v1beta1

from gangsched.api.gates import FeatureGates
from gangsched.api.inputs import read_inputs
from gangsched.builder import MinCountUpdate, apply_min_count_change, dump_yaml, expand_jobs
from gangsched.cli import main
from gangsched.scheduler import Scheduler, run_until_stable
from gangsched.store import Store

NODE = """apiVersion: v1
kind: Node
metadata: {name: n1}
status: {allocatable: {cpu: "3", memory: 8Gi, pods: "110"}}
"""


def gang_job(min_count: int | None) -> str:
    gang = "{}" if min_count is None else f"{{minCount: {min_count}}}"
    return f"""apiVersion: batch/v1
kind: Job
metadata: {{name: train, namespace: default}}
spec:
  parallelism: 4
  scheduling: {{schedulingPolicy: {{gang: {gang}}}}}
  template:
    spec:
      restartPolicy: Never
      containers: [{{name: c, image: i, resources: {{requests: {{cpu: "1"}}}}}}]
"""


def schedule_json(*texts: str, tmp_path: Path) -> dict[str, Any]:
    files = []
    for i, text in enumerate(texts):
        path = tmp_path / f"in{i}.yaml"
        path.write_text(text)
        files += ["-f", str(path)]
    result = CliRunner().invoke(main, ["schedule", *files, "-o", "json"])
    assert result.exit_code == 0, result.stderr
    parsed: dict[str, Any] = json.loads(result.stdout)
    return parsed


def build(text: str) -> str:
    result = CliRunner().invoke(main, ["build", "-f", "-"], input=text)
    assert result.exit_code == 0, result.stderr
    return result.stdout


def bound(state: dict[str, Any]) -> list[str | None]:
    return sorted(p["nodeName"] or "-" for p in state["pods"])


def test_a_gang_too_big_for_the_node_waits_whole(tmp_path: Path) -> None:
    state = schedule_json(NODE, build(gang_job(None)), tmp_path=tmp_path)
    assert bound(state) == ["-", "-", "-", "-"]
    [group] = state["podGroups"]
    [condition] = group["conditions"]
    assert (condition["type"], condition["status"], condition["reason"]) == (
        "PodGroupInitiallyScheduled",
        "False",
        "Unschedulable",
    )
    # The cycle's own words first, as the placement algorithm reports its one infeasible placement
    # (TopologyAwareWorkloadScheduling is on by default); the scheduler may append what preemption found.
    assert condition["message"].startswith(
        "pod group is unschedulable, 0/1 placements are available, first placement status: "
        "minCount (4) cannot be satisfied: 3 scheduled, 0 remaining"
    )


def test_min_count_decrease_written_back_lets_the_gang_start(tmp_path: Path) -> None:
    """The same gang, its PodGroup updated by apply_min_count_change and fed to `schedule` again."""
    loaded = read_inputs([str(_write(tmp_path, "built.yaml", build(gang_job(4))))], FeatureGates())
    objects = [item.obj for item in loaded.objects]
    [job] = [o for o in objects if isinstance(o, batch_v1.Job)]
    [group] = [o for o in objects if isinstance(o, scheduling_v1beta1.PodGroup)]
    smaller = job.to_dict()
    smaller["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] = 3
    new_job = batch_v1.Job.from_dict(smaller)
    update = apply_min_count_change(job, new_job, group)
    assert isinstance(update, MinCountUpdate) and update.decreased
    patched = [new_job if o is job else update.pod_group if o is group else o for o in objects]
    state = schedule_json(NODE, dump_yaml(patched), tmp_path=tmp_path)
    assert bound(state) == ["-", "n1", "n1", "n1"]
    assert state["podGroups"][0]["conditions"][0]["reason"] == "Scheduled"


def test_min_count_decrease_requeues_a_waiting_gang_in_a_running_scheduler(tmp_path: Path) -> None:
    gates = FeatureGates()
    loaded = read_inputs([str(_write(tmp_path, "in.yaml", NODE + "---\n" + gang_job(4)))], gates)
    objects, problems = expand_jobs([item.obj for item in loaded.objects], gates=gates)
    assert problems == []
    store = Store()
    store.add_all(objects)
    scheduler = Scheduler(store, gates)
    run_until_stable(store, scheduler)
    assert [p.spec.nodeName for p in store.list("Pod")] == [None] * 4

    [job] = store.list("Job")
    [group] = store.list("PodGroup")
    smaller = job.to_dict()
    smaller["spec"]["scheduling"]["schedulingPolicy"]["gang"]["minCount"] = 3
    update = apply_min_count_change(job, batch_v1.Job.from_dict(smaller), group)
    assert isinstance(update, MinCountUpdate)
    store.add(update.pod_group)  # what the Job controller's update does; the scheduler sees a decrease
    run_until_stable(store, scheduler)
    assert sorted(p.spec.nodeName or "-" for p in store.list("Pod")) == ["-", "n1", "n1", "n1"]


def _write(tmp_path: Path, name: str, text: str) -> Path:
    path = tmp_path / name
    path.write_text(text)
    return path
