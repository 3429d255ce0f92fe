"""`simulate --sweep`: policy x load x seed, in a local process pool or on a Ray cluster.

The load case, by hand: one node of 1 GPU; lone pods a and b of 1 GPU and 100 s of work, b created 100 s
after a. At load 1 b arrives as a ends: no wait, makespan 200 s. At load 2 arrival times are halved: b
arrives at 50 s and waits until a ends at 100 s (wait 50 s, average 25 s), makespan 200 s. At load 0.5 b
arrives at 200 s: no wait, makespan 300 s.
"""

from __future__ import annotations

import json
import os
import secrets
import subprocess
import sys
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gangsched.cli import main
from gangsched.sim import SimOptions
from gangsched.sim.command import SimRequest
from gangsched.sim.sweep import SweepPoint, grid, run_point, run_sweep

from .story import eight_gpu_story, node, pod


def _two_pods(tmp_path: Path) -> Path:
    a, b = pod("a", None, duration="100"), pod("b", None, duration="100")
    a["metadata"]["creationTimestamp"] = "2026-01-01T00:00:00Z"
    b["metadata"]["creationTimestamp"] = "2026-01-01T00:01:40Z"
    path = tmp_path / "two.yaml"
    path.write_text(yaml.safe_dump_all([node("n", 1), a, b]))
    return path


@pytest.mark.parametrize(
    ("load", "avg_wait", "makespan"), [(1.0, 0.0, 200.0), (2.0, 25.0, 200.0), (0.5, 0.0, 300.0)]
)
def test_load_divides_every_arrival_time(
    tmp_path: Path, load: float, avg_wait: float, makespan: float
) -> None:
    request = SimRequest(paths=(str(_two_pods(tmp_path)),))
    row = run_point(request, SimOptions(), SweepPoint("gang", load, 0))
    assert (row["policy"], row["load"], row["seed"]) == ("gang", load, 0)
    assert (row["summary"]["avg_wait_s"], row["summary"]["makespan_s"]) == (avg_wait, makespan)


def test_the_pool_gives_the_rows_of_running_each_point_alone_in_grid_order(tmp_path: Path) -> None:
    path = tmp_path / "story.yaml"
    path.write_text(yaml.safe_dump_all(eight_gpu_story()))
    request, options = SimRequest(paths=(str(path),)), SimOptions(until=86400.0)
    points = grid(["gang", "pod-by-pod"], [1.0, 2.0], [0, 1])
    assert [(p.policy, p.load, p.seed) for p in points][:3] == [
        ("gang", 1.0, 0),
        ("gang", 1.0, 1),
        ("gang", 2.0, 0),
    ]
    rows = run_sweep(request, options, points, workers=2)
    alone = [run_point(request, options, p) for p in points]
    assert [r["summary"] for r in rows] == [r["summary"] for r in alone]
    # the 8-GPU story: gang completes both trainings, pod-by-pod neither (tests/sim/test_story.py)
    assert {(r["policy"], r["summary"]["completed"]) for r in rows} == {("gang", 2), ("pod-by-pod", 0)}


def test_bad_sweep_input_is_one_line_and_exit_1(tmp_path: Path) -> None:
    args = ["simulate", "-f", str(_two_pods(tmp_path)), "--sweep"]
    result = CliRunner().invoke(main, [*args, "--loads", "1,0"])
    assert result.exit_code != 0 and "--loads: every load must be greater than 0: '1,0'" in result.output
    result = CliRunner().invoke(
        main, ["simulate", "--trace", "philly:/missing.csv", "--nodes", "1", "--sweep"]
    )
    assert result.exit_code == 1
    assert result.output.strip().splitlines() == [
        "error: /missing.csv: cannot read: No such file or directory"
    ]


def _ray() -> Any:
    try:
        import ray
    except ImportError:
        if os.environ.get("CI") == "true":
            pytest.fail(
                "ray is not installed (pip install -e '.[ray]'): the --ray test must run under CI=true"
            )
        pytest.skip("ray is not installed (pip install -e '.[ray]')")
    return ray


HEAD = """
import sys, ray
ray.init(address="local", num_cpus=2, include_dashboard=False, logging_level="ERROR")
print(ray.get_runtime_context().gcs_address.rpartition(":")[2], flush=True)
sys.stdin.read()  # until the test closes it
ray.shutdown()
"""


def test_the_same_sweep_on_an_existing_ray_cluster(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A local Ray cluster in a child process (2 CPUs, no dashboard, a token made here), and the CLI
    connecting to it by address over loopback: the rows are those of the local pool."""
    monkeypatch.setenv("RAY_AUTH_MODE", "token")  # before Ray is imported: it reads them once
    monkeypatch.setenv("RAY_AUTH_TOKEN", secrets.token_hex(16))
    _ray()
    head = subprocess.Popen(
        [sys.executable, "-c", HEAD], stdin=subprocess.PIPE, stdout=subprocess.PIPE, text=True, env=os.environ
    )
    try:
        assert head.stdout is not None
        port = head.stdout.readline().strip()
        assert port.isdigit(), f"the Ray head did not start: {port!r}"
        address = f"127.0.0.1:{port}"
        path = _two_pods(tmp_path)
        args = [
            "simulate",
            "-f",
            str(path),
            "--sweep",
            "--compare",
            "gang,gang-strict-fifo",
            "--loads",
            "1,2",
        ]
        result = CliRunner().invoke(main, [*args, "--ray", address, "-o", "json"])
        assert result.exit_code == 0, result.output
        rows = json.loads(result.output)["sweep"]
        points = grid(["gang", "gang-strict-fifo"], [1.0, 2.0], [0])
        local = run_sweep(SimRequest(paths=(str(path),)), SimOptions(), points, workers=1)
        assert [(r["policy"], r["load"], r["summary"]) for r in rows] == [
            (r["policy"], r["load"], r["summary"]) for r in local
        ]
        assert [r["summary"]["avg_wait_s"] for r in rows] == [0.0, 25.0, 0.0, 25.0]
    finally:
        if head.stdin is not None:
            head.stdin.close()
        try:
            head.wait(timeout=120)
        except subprocess.TimeoutExpired:
            head.kill()
            head.wait()
