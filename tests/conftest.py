"""Hypothesis profiles for the whole suite.

- `ci` (selected when CI=true): new examples on every run, no example database, and the seed printed in the
  report header, so that a failure found in CI is reproduced with `pytest --hypothesis-seed=N` (plus
  `HYPOTHESIS_PROFILE=ci`); a failing example also prints its `@reproduce_failure` blob.
- `dev` (the default elsewhere): derandomized, so that a local run is repeatable and quick to compare.

`HYPOTHESIS_PROFILE=ci|dev|broken` chooses explicitly (`broken`: see below).
"""

from __future__ import annotations

import os
import random

import pytest
from hypothesis import Phase, settings

settings.register_profile("ci", derandomize=False, database=None, print_blob=True)
settings.register_profile("dev", derandomize=True, database=None)
# for runs against deliberately broken code (tests/test_break_on_purpose.py, scripts/mutation.sh): repeatable,
# and no shrinking, since only whether a test fails matters there, not its smallest example
settings.register_profile(
    "broken",
    derandomize=True,
    database=None,
    phases=[Phase.explicit, Phase.reuse, Phase.generate, Phase.target],
)

_CI = os.environ.get("CI", "").lower() in ("1", "true", "yes")
PROFILE = os.environ.get("HYPOTHESIS_PROFILE") or ("ci" if _CI else "dev")
settings.load_profile(PROFILE)


def pytest_configure(config: pytest.Config) -> None:
    # Runs before hypothesis' own pytest_configure (conftest hooks come first), which forces this seed on
    # every test: one printed number reproduces the whole run.
    if PROFILE == "ci" and config.getoption("hypothesis_seed", None) is None:
        config.option.hypothesis_seed = str(random.SystemRandom().randrange(2**32))


def _describe(config: pytest.Config) -> str:
    seed = config.getoption("hypothesis_seed", None)
    return f"hypothesis profile: {PROFILE}" + (f", seed {seed} (--hypothesis-seed={seed})" if seed else "")


def pytest_report_header(config: pytest.Config) -> str:
    return _describe(config)


def pytest_terminal_summary(terminalreporter: pytest.TerminalReporter, config: pytest.Config) -> None:
    # also at the end, and under -q (which hides the header): the line to copy when something failed
    terminalreporter.write_line(_describe(config))
