"""Helpers shared by the api tests: where the repository is, and the validate command run in-process."""

from __future__ import annotations

from pathlib import Path

from click.testing import CliRunner, Result

from gangsched.cli import main

ROOT = Path(__file__).resolve().parents[2]
EXAMPLES = ROOT / "examples"


def run_validate(*args: str, stdin: str | bytes | None = None) -> Result:
    """`gangsched validate ARGS`; exceptions are caught so that a test can assert there was none."""
    return CliRunner().invoke(main, ["validate", *args], input=stdin, catch_exceptions=True)
