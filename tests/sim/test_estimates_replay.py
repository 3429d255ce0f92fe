"""`simulate --estimate oracle|limit|history`: what the planner is told of run times, on a schedule by hand.

One node of 8 GPUs, gang-backfill depth 1 (resolution 60 s). Three lone pods of 8 GPUs owned by Job `train`,
each with activeDeadlineSeconds 1800 (the user's limit), created at 0, 1 and 2 s; true run times 600, 900 and
600 s. Whatever the estimates, the node runs them one after the other: first 0-600, second 600-1500, third
1500-2100. What the estimates change is what the plan says beforehand:
- oracle (the true run times): second's first ETA is 600 (first's end); third is planned when second
  starts, at 600 + 900 = 1500. Both exact.
- limit (activeDeadlineSeconds): second's ETA is 1800 (first's limit), third's 600 + 1800 = 2400: both start
  earlier than planned (errors 1200 and 900); a reservation that moves earlier is no slip.
- history (the mean of the owner's last two runs, else the limit): at 1 s `train` has no history, so second's
  ETA is 1800 (error 1200). At 600 first ended, so `train` has one run of 600 s: second, starting then, is
  expected to end at 1200, and third is planned for 1200. Second overruns; when it ends at 1500 the plan
  moves third's reservation from 1200 to 1500 (error 300) and records the slip with its cause.
"""

from __future__ import annotations

from typing import Any

import pytest

from gangsched.scheduler.backfill import BackfillSettings
from gangsched.sim import SimOptions

from .story import node, simulate


def train_pod(name: str, created_s: int, duration: int) -> dict[str, Any]:
    owner = {"apiVersion": "batch/v1", "kind": "Job", "name": "train", "uid": "u", "controller": True}
    meta = {"name": name, "namespace": "default", "annotations": {"gangsched.io/duration": str(duration)},
            "creationTimestamp": f"2026-01-01T00:00:{created_s:02d}Z",
            "ownerReferences": [owner]}  # fmt: skip
    spec = {"activeDeadlineSeconds": 1800, "containers": [{"name": "c", "image": "x",
            "resources": {"requests": {"nvidia.com/gpu": "8"}}}]}  # fmt: skip
    return {"apiVersion": "v1", "kind": "Pod", "metadata": meta, "spec": spec}


SLIP = {
    "job": "third",
    "at_s": 1500.0,
    "old_start_s": 1200.0,
    "new_start_s": 1500.0,
    "causes": ["Pod default/second ran past its estimate of 600s (expected to end at t=1200s)"],
}


@pytest.mark.parametrize(
    ("estimate", "etas", "slips"),
    [
        ("oracle", {"second": 600.0, "third": 1500.0}, []),
        ("limit", {"second": 1800.0, "third": 2400.0}, []),
        ("history", {"second": 1800.0, "third": 1200.0}, [SLIP]),
    ],
)
def test_the_estimate_source_changes_the_plan_not_the_schedule(
    estimate: str, etas: dict[str, float], slips: list[dict[str, Any]]
) -> None:
    docs = [
        node("n1", 8),
        train_pod("first", 0, 600),
        train_pod("second", 1, 900),
        train_pod("third", 2, 600),
    ]
    options = SimOptions(policy="gang-backfill", backfill=BackfillSettings(depth=1), estimate=estimate)
    summary, jobs, _ = simulate(docs, options)
    assert {name: job["admitted_s"] for name, job in jobs.items()} == {
        "first": 0.0,
        "second": 600.0,
        "third": 1500.0,
    }
    assert {name: jobs[name]["first_eta_s"] for name in etas} == etas
    assert summary["estimate"] == estimate
    assert summary["slips"] == slips
    errors = sorted(abs(etas[name] - jobs[name]["admitted_s"]) for name in etas)
    assert summary["eta"]["median_abs_error_s"] == pytest.approx(sum(errors) / 2)
