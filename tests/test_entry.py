"""The `gangsched` console script (gangsched.entry) pauses the cyclic GC only while it imports the CLI: the
command runs with the collector on (even if the caller had turned it off), its exit status passed on. It tells
the command that the process is its own: `schedule` then ends it as soon as its output is flushed, with the
same output and exit status as when the CLI runs in-process, where it returns."""

from __future__ import annotations

import gc
import os
import subprocess
import sys
from pathlib import Path

import pytest
from click.testing import CliRunner

import gangsched.cli
from gangsched import entry

EXAMPLE = str(Path(__file__).parent.parent / "examples" / "eight-gpu")


def test_the_command_runs_with_the_collector_back_on(monkeypatch: pytest.MonkeyPatch) -> None:
    seen: list[bool] = []

    def command(**_context: object) -> None:
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


@pytest.mark.parametrize(("given", "expected"), [(None, "1"), ("4", "4")])
def test_openblas_is_asked_for_one_thread_unless_the_user_chose(
    monkeypatch: pytest.MonkeyPatch, given: str | None, expected: str
) -> None:
    """Set before the CLI (and numpy) is imported: OpenBLAS reads it once, when it loads."""
    if given is None:
        monkeypatch.delenv("OPENBLAS_NUM_THREADS", raising=False)
    else:
        monkeypatch.setenv("OPENBLAS_NUM_THREADS", given)
    seen: list[str | None] = []

    def command(**_context: object) -> None:
        seen.append(os.environ.get("OPENBLAS_NUM_THREADS"))
        sys.exit(0)

    monkeypatch.setattr(gangsched.cli, "main", command)
    with pytest.raises(SystemExit):
        entry.main()
    assert seen == [expected]


@pytest.mark.parametrize("output", ["json", "yaml", "table"])
def test_schedule_in_its_own_process_prints_what_it_prints_in_process(output: str) -> None:
    args = ["schedule", "-f", EXAMPLE, "-o", output]
    in_process = CliRunner().invoke(gangsched.cli.main, args)
    assert in_process.exit_code == 0, in_process.output
    command = (  # an atexit hook tells whether the interpreter's teardown ran after the command
        "import atexit, sys; atexit.register(lambda: sys.stderr.write('torn down'));"
        "from gangsched.entry import main; sys.argv[0] = 'gangsched'; main()"
    )
    own = subprocess.run(
        [sys.executable, "-c", command, *args], capture_output=True, text=True, env={"COLUMNS": "80"}
    )
    assert own.returncode == 0, own.stderr
    assert own.stderr == ""  # ended by the command, not torn down
    assert own.stdout == in_process.output
    assert "gpu-node" in own.stdout  # the bindings, not an empty output twice


def test_schedule_writes_its_load_phase_cpu_seconds_only_when_asked(tmp_path: Path) -> None:
    """benchmarks/cli.py's hook (cli.LOAD_CPU_FILE): a number of CPU seconds in the file named, and the same
    output as without it."""
    args = ["schedule", "-f", EXAMPLE, "-o", "json"]
    plain = CliRunner().invoke(gangsched.cli.main, args)
    assert list(tmp_path.iterdir()) == []
    record = tmp_path / "load-cpu"
    asked = CliRunner().invoke(gangsched.cli.main, args, env={gangsched.cli.LOAD_CPU_FILE: str(record)})
    assert asked.exit_code == plain.exit_code == 0, asked.output
    assert asked.output == plain.output
    assert float(record.read_text()) >= 0
