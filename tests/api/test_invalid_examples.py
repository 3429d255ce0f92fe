"""Every file in examples/invalid gives exactly the lines of its .expected sibling, and exit code 1.

A case may ask for feature gates with a `# feature-gates: A=false,...` header line.
"""

from __future__ import annotations

import re
from pathlib import Path

import pytest
from api_helpers import EXAMPLES, ROOT, run_validate

CASES = sorted((EXAMPLES / "invalid").glob("*.yaml"))
_GATES = re.compile(r"^# feature-gates: (\S+)$", re.M)


def test_there_are_at_least_40_cases() -> None:
    assert len(CASES) >= 40
    assert all(c.with_suffix(".expected").exists() for c in CASES)


@pytest.mark.parametrize("case", CASES, ids=lambda p: p.stem)
def test_invalid_case(case: Path, in_root: Path) -> None:
    gates = _GATES.search(case.read_text())
    args = ["-f", str(case.relative_to(ROOT))]
    if gates:
        args += ["--feature-gates", gates.group(1)]
    result = run_validate(*args)
    assert result.exception is None or isinstance(result.exception, SystemExit)
    assert result.exit_code == 1
    expected = case.with_suffix(".expected").read_text().splitlines()
    assert result.stdout.splitlines() == expected


def test_gate_cases_are_about_the_gate(in_root: Path) -> None:
    """With every gate on, a `*-gate-off` case reports no Forbidden line: the gate is what it tests."""
    for case in CASES:
        if "gate-off" in case.stem:
            result = run_validate("-f", str(case.relative_to(ROOT)))
            assert all("Forbidden" not in line for line in result.stdout.splitlines()), case.stem
