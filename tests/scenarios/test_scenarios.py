"""Every scenario file under tests/scenarios/ runs and must match its expectations."""

from __future__ import annotations

from pathlib import Path

import pytest

from .harness import run_scenario

HERE = Path(__file__).parent
SCENARIOS = sorted(p for p in HERE.rglob("*.yaml"))


@pytest.mark.parametrize("path", SCENARIOS, ids=[str(p.relative_to(HERE)) for p in SCENARIOS])
def test_scenario(path: Path) -> None:
    run_scenario(path)


PREEMPTION = sorted((HERE / "preemption").glob("*.yaml"))


@pytest.mark.parametrize("path", PREEMPTION, ids=[p.name for p in PREEMPTION])
def test_preemption_scenario_with_terminating_victims(path: Path) -> None:
    """Victims that take 30 s to leave: the same victims and the same final placements as when they leave at
    once, and no preemptor evicts again while its victims terminate (no preemption storm)."""
    run_scenario(path, termination_seconds=30.0)
