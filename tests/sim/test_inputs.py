"""Workload inputs: the philly and openb formats (small CSVs written here), the synthetic generator, and
the manifest rules (duration annotation, arrival by creationTimestamp or input order)."""

from __future__ import annotations

from pathlib import Path

import pytest
import yaml

from gangsched.api.gates import FeatureGates
from gangsched.sim.command import SimInputError, SimRequest, build_workload
from gangsched.sim.inputs import TraceError, from_manifests, openb, philly, synthetic

from ..scenarios.harness import load_objects
from .story import group, node, pod

PHILLY = """timestamp,duration,num_gpus,gpu_time,cluster
2017-10-09 07:00:10,60.0,16,960.0,a
2017-10-09 07:00:00,30.0,1,30.0,a
2017-10-09 07:00:10,90.0,12,1080.0,b
"""


def test_philly_sorted_by_submission_and_big_jobs_split_into_gangs_of_8_gpu_pods(tmp_path: Path) -> None:
    path = tmp_path / "philly.csv"
    path.write_text(PHILLY)
    jobs = philly(str(path))
    assert [(j.submit, j.duration, j.size, j.min_count, j.gpus_per_pod) for j in jobs] == [
        (0.0, 30.0, 1, 1, 1),
        (10.0, 60.0, 2, 2, 8),  # 16 GPUs: 2 pods of 8
        (10.0, 90.0, 2, 2, 6),  # 12 GPUs: 2 pods of 6 (ties keep file order)
    ]
    objects = jobs[1].make()
    assert [o.kind for o in objects] == ["PodGroup", "Pod", "Pod"]
    assert objects[0].spec.schedulingPolicy.gang.minCount == 2
    assert objects[1].spec.containers[0].resources.requests == {"nvidia.com/gpu": "8"}


def test_philly_limit_takes_the_first_rows_in_submission_order_not_file_order(tmp_path: Path) -> None:
    """The file lists the 07:00:10 jobs first; --limit 2 must take the 07:00:00 job and the first 07:00:10."""
    path = tmp_path / "philly.csv"
    path.write_text(PHILLY)
    jobs = philly(str(path), limit=2)
    assert [(j.submit, j.duration) for j in jobs] == [(0.0, 30.0), (10.0, 60.0)]


def test_a_lone_philly_job_carries_its_run_time_for_the_planner(tmp_path: Path) -> None:
    path = tmp_path / "philly.csv"
    path.write_text(PHILLY)
    (pod_,) = philly(str(path))[0].make()
    assert pod_.metadata.annotations == {"gangsched.io/duration": "30.0"}


def test_philly_virtual_clusters_become_namespaces_by_gpu_time(tmp_path: Path) -> None:
    """GPU-time: a 30 + 960 = 990, b 1080, c 5 x 100 = 500. Two namespaces: b alone, a and c together."""
    path = tmp_path / "philly.csv"
    path.write_text(PHILLY + "2017-10-09 07:00:20,100.0,5,500.0,c\n")
    assert [j.namespace for j in philly(str(path), namespaces=2)] == ["vc-rest", "vc-rest", "vc-b", "vc-rest"]
    three = philly(str(path), namespaces=3)
    assert [j.namespace for j in three] == ["vc-a", "vc-a", "vc-b", "vc-rest"]
    assert all(o.metadata.namespace == "vc-b" for o in three[2].make())
    assert {j.namespace for j in philly(str(path))} == {"default"}
    # Ranked among the rows replayed: the first two rows alone are all a's.
    assert [j.namespace for j in philly(str(path), limit=2, namespaces=2)] == ["vc-a", "vc-a"]


@pytest.mark.parametrize(
    ("row", "message"),
    [("2017-13-09 07:00:00,1,1,1,a", "line 2: timestamp"),
     ("2017-10-09 07:00:00,x,1,1,a", "line 2: duration"),
     ("2017-10-09 07:00:00,1,0,1,a", "line 2: num_gpus: must be >= 1")],
)  # fmt: skip
def test_philly_bad_rows_name_file_line_and_column(tmp_path: Path, row: str, message: str) -> None:
    path = tmp_path / "bad.csv"
    path.write_text("timestamp,duration,num_gpus,gpu_time,cluster\n" + row + "\n")
    with pytest.raises(TraceError, match=f"{path}: {message}"):
        philly(str(path))


def test_openb_gpu_shares_in_milli_gpus(tmp_path: Path) -> None:
    pods = tmp_path / "pods.csv"
    pods.write_text(
        "name,cpu_milli,memory_mib,num_gpu,gpu_milli,gpu_spec,qos,pod_phase,creation_time,deletion_time,scheduled_time\n"
        "p0,1000,1024,1,460,,LS,Running,100,400,100\n"
        "p1,2000,2048,2,1000,,LS,Running,50,,50\n"
    )
    nodes = tmp_path / "nodes.csv"
    nodes.write_text("sn,cpu_milli,memory_mib,gpu,model\nn0,64000,262144,2,P100\n")
    workload = openb(str(pods), str(nodes))
    assert workload.cluster[0].status.allocatable["gangsched.io/milli-gpu"] == "2000"
    assert [(j.name, j.submit, j.duration, j.gpus) for j in workload.jobs] == [
        ("p1", 0.0, None, 2.0), ("p0", 50.0, 300.0, 0.46)
    ]  # fmt: skip


def test_synthetic_is_the_same_for_a_seed_and_differs_across_seeds() -> None:
    def draw(seed: int) -> list[tuple[float, float | None, int]]:
        jobs = synthetic(seed=seed, jobs=50, arrival_rate_per_h=6, sizes={1: 1, 4: 1}, mean_duration_s=600)
        return [(j.submit, j.duration, j.size) for j in jobs]

    assert draw(3) == draw(3) != draw(4)
    assert {size for _, _, size in draw(3)} == {1, 4}
    assert draw(3)[0][0] == 0.0


def test_manifests_arrive_in_input_order_one_second_apart_with_annotated_durations() -> None:
    docs = [
        node("n", 8),
        group("g", 2, "1h30m"),
        pod("lone", None, duration="90"),
        pod("g-0", "g"),
        pod("g-1", "g"),
    ]
    workload = from_manifests(load_objects(docs, "t", FeatureGates()), "t")
    assert [(j.name, j.submit, j.duration, j.size, j.pod_offsets) for j in workload.jobs] == [
        ("g", 0.0, 5400.0, 2, (2.0, 3.0)),
        ("lone", 1.0, 90.0, 1, (0.0,)),
    ]


def test_creation_timestamps_win_over_input_order() -> None:
    late = group("late", 1, "10")
    late["metadata"]["creationTimestamp"] = "2026-01-01T00:10:00Z"
    early = pod("early", None, duration="10")
    early["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    docs = [node("n", 8), late, pod("late-0", "late"), early]
    jobs = from_manifests(load_objects(docs, "t", FeatureGates()), "t").jobs
    assert [(j.name, j.submit) for j in jobs] == [("early", 0.0), ("late", 600.0)]


def test_a_malformed_duration_names_file_object_and_field(tmp_path: Path) -> None:
    """Refused by validation before anything runs, with validate's line (api/validation/annotations.py)."""
    path = tmp_path / "bad.yaml"
    path.write_text(yaml.safe_dump_all([node("n", 8), group("g", 1, "soon"), pod("g-0", "g")]))
    with pytest.raises(SimInputError) as e:
        build_workload(SimRequest(paths=(str(path),)))
    assert str(e.value) == (
        f'{path}: PodGroup ml/g: metadata.annotations[gangsched.io/duration]: Invalid value: "soon": '
        "must be a non-negative number of seconds or a Go duration such as 1h30m"
    )
