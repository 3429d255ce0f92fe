"""Hypothesis profiles for the whole suite, and fixtures shared by the unit and the live tests (gangsched
installed from its wheel, as the image has it).

- `ci` (selected when CI=true): new examples on every run, no example database, and the seed printed in the
  report header, so that a failure found in CI is reproduced with `pytest --hypothesis-seed=N` (plus
  `HYPOTHESIS_PROFILE=ci`); a failing example also prints its `@reproduce_failure` blob.
- `dev` (the default elsewhere): derandomized, so that a local run is repeatable and quick to compare.

`HYPOTHESIS_PROFILE=ci|dev|broken` chooses explicitly (`broken`: see below).
"""

from __future__ import annotations

import os
import random
import shutil
import subprocess
import sys
import tempfile
from collections.abc import Iterator
from pathlib import Path

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


REPO = Path(__file__).resolve().parents[1]
#: The image's user (Dockerfile `USER`): the installed wheel is run as it, so it can write nothing there.
IMAGE_UID = 65532


def unavailable(reason: str) -> None:
    """Skip a test that needs a tool this machine cannot provide; under CI=true, fail instead."""
    if os.environ.get("CI", "").lower() in ("1", "true", "yes"):
        pytest.fail(f"cannot run under CI=true: {reason}", pytrace=False)
    pytest.skip(f"skipped (it would fail under CI=true): {reason}")


@pytest.fixture(scope="session")
def installed_gangsched() -> Iterator[Path]:
    """The `gangsched` console script of a clean venv into which only the project's wheel (and what it
    depends on) was installed, as the Dockerfile does. Its directory is root-owned and world-readable, so a
    process run as IMAGE_UID can use it but write nothing into it (the image's read-only root filesystem)."""
    root = Path(tempfile.mkdtemp(prefix="gangsched-wheel-"))
    try:
        root.chmod(0o755)
        wheels = root / "wheels"
        pip = [sys.executable, "-m", "pip", "--disable-pip-version-check", "-q"]
        subprocess.run([*pip, "wheel", "--no-deps", "-w", str(wheels), str(REPO)], check=True, timeout=600)
        (wheel,) = wheels.glob("gangsched-*.whl")
        subprocess.run([_system_python(), "-m", "venv", str(root / "venv")], check=True, timeout=120)
        venv_pip = [str(root / "venv/bin/python"), "-m", "pip", "--disable-pip-version-check", "-q"]
        subprocess.run([*venv_pip, "install", str(wheel)], check=True, timeout=600)
        yield root / "venv/bin/gangsched"
    finally:
        shutil.rmtree(root, ignore_errors=True)


def _system_python() -> str:
    """The interpreter for the clean venv: the system's (/usr/bin, readable by every user, as the image's
    is) when it is recent enough and has venv; else this one (which may live where uid 65532 cannot read)."""
    system = "/usr/bin/python3"
    check = "import sys, venv, ensurepip; assert sys.version_info >= (3, 11)"
    if Path(system).exists() and subprocess.run([system, "-c", check], capture_output=True).returncode == 0:
        return system
    return sys.executable


def as_image_user(args: list[str]) -> list[str]:
    """`args` run as the image's non-root user with no supplementary groups (setpriv, util-linux)."""
    if os.geteuid() != 0:
        return args  # already not root
    # A change of user clears the parent-death signal a ManagedProcess sets: set it again, so a test run that
    # is killed leaves nothing running.
    return ["setpriv", f"--reuid={IMAGE_UID}", f"--regid={IMAGE_UID}", "--clear-groups", "--pdeathsig=KILL",
            *args]  # fmt: skip


def image_env(home: Path) -> dict[str, str]:
    """The image's environment (Dockerfile ENV) with a HOME that is not the tester's."""
    return {
        "PATH": "/usr/bin:/bin",
        "HOME": str(home),
        "PYTHONDONTWRITEBYTECODE": "1",
        "PYTHONUNBUFFERED": "1",
        "LANG": "C.UTF-8",
    }


def tree_state(root: Path) -> dict[str, tuple[int, int]]:
    """Every file under `root` with its size and mtime: compare them before and after, to see nothing was
    written."""
    return {
        str(p.relative_to(root)): (p.stat().st_size, p.stat().st_mtime_ns)
        for p in root.rglob("*")
        if p.is_file()
    }
