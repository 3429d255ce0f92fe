"""What `gangsched schedule` imports depends on what the input holds: the claims stage's modules (volumes'
and devices' allocation, claims.py) come in only with pods that use claims, as the scheduler builds that
stage only then. Some standard modules it never needs for YAML files. Each case runs in a fresh interpreter:
this one has imported everything."""

from __future__ import annotations

import subprocess
import sys
from pathlib import Path

import pytest

EXAMPLES = Path(__file__).parent.parent / "examples"
CLAIMS_STAGE = (
    "gangsched.scheduler.claims",
    "gangsched.scheduler.devices",
    "gangsched.scheduler.claims_stage",
)


@pytest.mark.parametrize(
    ("example", "imported"),
    [("eight-gpu", []), ("valid/61-devices.yaml", list(CLAIMS_STAGE))],
    ids=["no-claims", "device-claims"],
)
def test_schedule_imports_the_claims_stage_only_for_claims(example: str, imported: list[str]) -> None:
    assert imported_by_schedule(EXAMPLES / example, CLAIMS_STAGE) == imported


def imported_by_schedule(path: Path, modules: tuple[str, ...]) -> list[str]:
    """Which of `modules` a fresh interpreter has imported once `gangsched schedule -f path -o json` ran
    (through click's runner, as the command line would), in `modules`' order."""
    code = (
        "import sys; from click.testing import CliRunner; import gangsched.cli; "
        f"result = CliRunner().invoke(gangsched.cli.main, ['schedule', '-f', {str(path)!r}, "
        "'-o', 'json']); assert result.exit_code == 0, result.output; "
        f"print(' '.join(m for m in {modules!r} if m in sys.modules))"
    )
    done = subprocess.run([sys.executable, "-c", code], capture_output=True, text=True, check=True)
    return done.stdout.split()


#: Standard modules that `schedule` of YAML files has no use for, each a millisecond or more of every start:
#: json is for JSON input and other commands' output, pathlib for a directory input, urllib.parse (and the
#: ipaddress it imports) for an EBS volume's id.
UNUSED_STDLIB = ("json", "pathlib", "urllib.parse", "ipaddress")


def test_schedule_of_yaml_files_imports_no_json_pathlib_or_urllib() -> None:
    assert imported_by_schedule(EXAMPLES / "valid/10-podgroup-gang.yaml", UNUSED_STDLIB) == []


def test_schedule_imports_no_numpy_typing() -> None:
    """gangsched's modules import numpy.typing for the type checker only: the `gangsched` command gives
    numpy.linalg a stand-in of numpy's typing aliases (_numpy_docs_skipped.py), and a numpy.typing imported
    by the run would import them all (about 50M instructions)."""
    assert imported_by_schedule(EXAMPLES / "eight-gpu", ("numpy.typing",)) == []


#: lightkube's modules of the kinds a gang's input (nodes, pods, PodGroups) does not hold: each imported where
#: it is used (api/kinds.py), about 21M instructions of every start when kinds.py imported them all.
OTHER_KINDS_MODELS = tuple(
    f"lightkube.models.{m}"
    for m in ("batch_v1", "policy_v1", "resource_v1", "scheduling_v1", "scheduling_v1alpha3", "storage_v1")
)


def test_schedule_of_a_gang_imports_no_model_of_the_kinds_it_does_not_hold() -> None:
    assert imported_by_schedule(EXAMPLES / "eight-gpu", OTHER_KINDS_MODELS) == []


def test_schedule_of_jobs_imports_their_models() -> None:
    """The same check sees a model imported when the input holds its kind (a Job has a CompositePodGroup's
    scheduling types in its spec)."""
    assert imported_by_schedule(EXAMPLES / "jobs/gang-job.yaml", OTHER_KINDS_MODELS) == [
        "lightkube.models.batch_v1",
        "lightkube.models.scheduling_v1alpha3",
    ]
