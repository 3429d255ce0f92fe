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
