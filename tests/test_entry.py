"""The `gangsched` console script (gangsched.entry) pauses the cyclic GC only while it imports the CLI: the
command runs with the collector on (even if the caller had turned it off), its exit status passed on."""

from __future__ import annotations

import gc
import sys

import pytest

import gangsched.cli
from gangsched import entry


def test_the_command_runs_with_the_collector_back_on(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    def command() -> None:
        seen.append(gc.isenabled())
        sys.exit(3)

    monkeypatch.setattr(gangsched.cli, "main", command)
    gc.disable()
    try:
        with pytest.raises(SystemExit) as exited:
            entry.main()
    finally:
        gc.enable()
    assert exited.value.code == 3
    assert seen == [True]
