"""`gangsched simulate` through click: the JSON contract, tables, plots, and bad input."""

from __future__ import annotations

import json
from pathlib import Path
from typing import Any

import pytest
import yaml
from click.testing import CliRunner

from gangsched.cli import main

from .story import eight_gpu_story

SUMMARY_KEYS = {"jobs", "completed", "avg_jct_s", "p50_jct_s", "p99_jct_s", "avg_wait_s", "max_wait_s",
                "makespan_s", "gpu_utilization", "idle_allocated_gpu_hours", "preemptions",
                "lost_gpu_hours"}  # fmt: skip
JOB_KEYS = {"namespace", "name", "gpus", "submit_s", "start_s", "end_s", "state", "restarts"}


@pytest.fixture
def story(tmp_path: Path) -> str:
    path = tmp_path / "story.yaml"
    path.write_text(yaml.safe_dump_all(eight_gpu_story()))
    return str(path)


def _run(*args: str) -> Any:
    return CliRunner().invoke(main, ["simulate", *args], env={"COLUMNS": "200"})


def test_json_has_the_contract_keys(story: str) -> None:
    result = _run("-f", story, "--until", "24h", "-o", "json")
    assert result.exit_code == 0, result.output
    out = json.loads(result.stdout)
    assert set(out["summary"]) >= SUMMARY_KEYS
    assert all(set(j) >= JOB_KEYS for j in out["jobs"])
    assert [(j["name"], j["state"], j["end_s"]) for j in out["jobs"]] == [
        ("train-a", "completed", 7212.0), ("train-b", "completed", 14412.0)
    ]  # fmt: skip
    assert 0.0 <= out["summary"]["gpu_utilization"] <= 1.0


def test_compare_prints_one_table_and_one_figure(story: str, tmp_path: Path) -> None:
    png = tmp_path / "cmp.png"
    result = _run("-f", story, "--until", "86400", "--compare", "gang,pod-by-pod", "--plot", str(png))
    assert result.exit_code == 0, result.output
    assert "gang" in result.stdout and "pod-by-pod" in result.stdout and "idle: gang_wait" in result.stdout
    assert png.read_bytes()[:8] == b"\x89PNG\r\n\x1a\n" and png.stat().st_size > 10_000


def test_synthetic_trace_on_generated_nodes_is_deterministic() -> None:
    args = (
        "--trace",
        "synthetic:40",
        "--nodes",
        "4",
        "--gang-sizes",
        "1:3,2:1,4:1",
        "--seed",
        "7",
        "-o",
        "json",
    )
    first, second = _run(*args), _run(*args)
    assert first.exit_code == 0, first.output
    assert first.stdout == second.stdout
    assert json.loads(first.stdout)["summary"]["completed"] == 40


@pytest.mark.parametrize(
    ("args", "message"),
    [(("--trace", "philly:/nonexistent.csv", "--nodes", "2"), "error: /nonexistent.csv: cannot read"),
     (("--trace", "slurm:x", "--nodes", "2"), "error: --trace: invalid value 'slurm:x'"),
     (("--trace", "synthetic:5"), "error: no nodes: give Node objects with -f, or --nodes N"),
     (("--trace", "synthetic:5", "--nodes", "2", "--recovery", "later"), "invalid recovery policy 'later'"),
     (("--trace", "synthetic:5", "--nodes", "2", "--fail", "10:boom:x"), "invalid failure '10:boom:x'"),
     (("--trace", "synthetic:5", "--nodes", "2", "--estimate", "guess"), "'guess' is not one of 'oracle'")],
)  # fmt: skip
def test_bad_input_is_one_line_and_exit_1(args: tuple[str, ...], message: str) -> None:
    result = _run(*args)
    assert result.exit_code == 1, result.output
    assert message in result.output


def test_estimate_reaches_the_planner(story: str) -> None:
    """The story's jobs carry no limit. Under oracle, train-b's first ETA is train-a's true end (7212 s) on
    the plan's 60 s grid: 7260. Under limit the planner knows no run time, so train-a is planned as never
    ending and train-b gets its first ETA only when train-a has ended and it can start: 7212."""
    etas = {}
    for estimate in ("oracle", "limit"):
        result = _run(
            "-f", story, "--until", "24h", "--policy", "gang-backfill", "--estimate", estimate, "-o", "json"
        )
        assert result.exit_code == 0, result.output
        out = json.loads(result.stdout)
        assert out["summary"]["estimate"] == estimate
        etas[estimate] = [j["first_eta_s"] for j in out["jobs"]]
    assert etas == {"oracle": [None, 7260.0], "limit": [None, 7212.0]}
