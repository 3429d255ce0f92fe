"""The suite proves it can fail: each patch below breaks the scheduler on purpose, in a copy of the source,
and the tests named with it must then fail.

These are the blind spots a review found (a scheduler that never binds, preemption switched off, the
minCount check off by one, topology that ignores the domain, no reprieve), and shortcuts that must make
the decisions of what they skip (a gang's alike members); each patch names the tests that must notice it.
A patch whose anchor text no longer exists fails this test too: when the code is refactored, the patch is
rewritten, never dropped. Each run is niced, uses the `broken` hypothesis profile (derandomized,
no shrinking) and runs only the named tests, so that the runs take about a minute on 2 cores.
"""

from __future__ import annotations

import os
import re
import shutil
import subprocess
import sys
from dataclasses import dataclass
from pathlib import Path

import pytest

ROOT = Path(__file__).resolve().parent.parent
SCHED = "src/gangsched/scheduler"


@dataclass(frozen=True)
class Break:
    file: str  # relative to the repository
    pattern: str  # a regular expression that must match exactly once
    replacement: str
    must_fail: tuple[str, ...]  # pytest node ids, every one of which must fail


BREAKS = {
    "schedule_one returns None": Break(
        f"{SCHED}/scheduler.py",
        r'(    def schedule_one\(self[^\n]*\n        """[^\n]*"""\n)',
        r"\1        return None\n",
        (
            "tests/property/test_engine_properties.py::test_a_group_that_fits_alone_on_the_empty_cluster_binds",
            "tests/property/test_preemption_properties.py::test_preemption_invariants",
            "tests/scenarios/test_scenarios.py::test_scenario[engine/podgroup-all-fit.yaml]",
        ),
    ),
    "preemption disabled": Break(
        f"{SCHED}/postfilter.py",
        r"outcome = preempt_pod_group\(view, pg, pods, rerun\)(.*?)outcome = preempt_pod\(view, pi\)",
        r'outcome = "preemption disabled"\1outcome = "preemption disabled"',
        (
            "tests/property/test_preemption_properties.py::test_preemption_invariants",
            "tests/scenarios/test_scenarios.py::test_scenario[preemption/basic-full.yaml]",
            "tests/scenarios/test_scenarios.py::test_scenario[preemption/lone-pod-pdb-decides-node.yaml]",
        ),
    ),
    "minCount check off by one": Break(
        f"{SCHED}/cycle.py",
        r"return attempt\.min_count if attempt\.gang else 1",
        r"return attempt.min_count - 1 if attempt.gang else 1",
        (
            "tests/property/test_engine_properties.py::test_a_group_that_fits_alone_on_the_empty_cluster_binds",
            "tests/property/test_engine_properties.py::test_invariants_hold_after_every_decision",
            "tests/scenarios/test_scenarios.py::test_scenario[engine/podgroup-blocker.yaml]",
        ),
    ),
    "topology placement ignores the domain": Break(
        f"{SCHED}/topology.py",
        r"result = run_group_cycle\(ev, attempt, best\.nodes, best\.domain\)",
        r"result = run_group_cycle(ev, attempt, candidates)",
        (
            "tests/property/test_topology_properties.py::test_constrained_gangs_land_in_one_domain",
            "tests/scenarios/test_scenarios.py::test_scenario[topology/tas-only-one-rack-fits.yaml]",
        ),
    ),
    "a gang's alike members placed on a stale row": Break(
        f"{SCHED}/evaluator.py",
        r"            self\._sync\(c\)\n            node = self\._pick_by_resources",
        r"            node = self._pick_by_resources",
        (
            "tests/property/test_fast_paths.py::test_shortcuts_make_the_same_schedule",
            "tests/scheduler/test_alike_members.py::"
            "test_identical_members_fill_identical_nodes_evenly_and_the_one_left_over_says_why[0]",
        ),
    ),
    "reprieve step skipped": Break(
        f"{SCHED}/preemption.py",
        r"victims = _reprieve\(view, units, result\.placed, out\)",
        r"victims = sort_by_importance(units)",
        (
            "tests/property/test_preemption_properties.py::test_preemption_invariants",
            "tests/scenarios/test_scenarios.py::test_scenario[preemption/pdb-reprieve.yaml]",
            "tests/scenarios/test_scenarios.py::test_scenario[preemption/partial.yaml]",
        ),
    ),
}


def apply(tree: Path, b: Break) -> None:
    path = tree / b.file
    text = path.read_text()
    new, n = re.subn(b.pattern, b.replacement, text, flags=re.DOTALL)
    assert n == 1, f"{b.file}: the patch's anchor {b.pattern!r} matches {n} times: rewrite the patch"
    path.write_text(new)


def failed_tests(tree: Path, node_ids: tuple[str, ...]) -> set[str]:
    """Run `node_ids` against the source in `tree`; returns those that failed."""
    env = {**os.environ, "PYTHONPATH": str(tree / "src"), "HYPOTHESIS_PROFILE": "broken"}
    where = subprocess.run(
        [sys.executable, "-c", "import gangsched; print(gangsched.__file__)"],
        env=env,
        capture_output=True,
        text=True,
        check=True,
    ).stdout
    assert where.startswith(str(tree)), f"the copy is not the code imported: {where}"
    run = subprocess.run(
        [
            "nice",
            "-n",
            "10",
            sys.executable,
            "-m",
            "pytest",
            "-q",
            "-rf",
            "-p",
            "no:cacheprovider",
            *node_ids,
        ],
        cwd=ROOT,
        env=env,
        capture_output=True,
        text=True,
    )
    assert run.returncode in (0, 1), f"pytest could not run the tests ({run.returncode}):\n{run.stdout}"
    return set(re.findall(r"^FAILED (\S+)", run.stdout, flags=re.MULTILINE))


@pytest.mark.parametrize("name", list(BREAKS))
def test_breaking_the_scheduler_makes_tests_fail(name: str, tmp_path: Path) -> None:
    b = BREAKS[name]
    shutil.copytree(
        ROOT / "src", tmp_path / "src", ignore=shutil.ignore_patterns("*.egg-info", "__pycache__")
    )
    apply(tmp_path, b)
    failed = failed_tests(tmp_path, b.must_fail)
    missed = [t for t in b.must_fail if t not in failed]
    assert not missed, f"with {name!r}, these tests still pass: {missed}"
