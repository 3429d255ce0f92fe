"""The public API others build on: these names are a promise; change them only on purpose."""

from __future__ import annotations

import importlib
from pathlib import Path

import pytest

import gangsched.builder as builder
from tests.test_schedule_imports import imported_by_schedule

PUBLIC = {
    "JOB_BUILD_OPTIONS", "BlockPaths", "BuildError", "BuildOptions", "Builder", "CompositeGroupConfig",
    "CompositeWorkloadItem", "DisruptionModeOption", "JobExpansion", "JobSetExpansion", "MinCountUpdate",
    "PodGroupConfig", "SchedulingPolicyOption", "WorkloadItem", "apply_min_count_change", "build_job",
    "build_jobset", "build_manifests", "default_gang_min_count", "dump_json", "dump_yaml", "expand_jobs",
    "generate_pod_group_name", "generate_workload_name", "job_builder", "job_workload_item", "manifest",
    "pod_group_template_name", "validate_job_scheduling", "validate_job_scheduling_update",
}  # fmt: skip


def test_public_names_are_exactly_the_promised_ones() -> None:
    assert set(builder.__all__) == PUBLIC
    assert all(getattr(builder, name, None) is not None for name in PUBLIC)


def test_public_names_are_documented() -> None:
    callables = [n for n in PUBLIC if callable(getattr(builder, n))]
    undocumented = [n for n in callables if not (getattr(builder, n).__doc__ or "").strip()]
    assert undocumented == []
    assert ">>>" in (builder.BuildOptions.__doc__ or "") and "build_workload" in (builder.__doc__ or "")


def test_docstring_examples_run() -> None:
    import doctest

    from gangsched.builder import names, options

    for module in (names, options):
        failures, tried = doctest.testmod(module)
        assert (failures, tried > 0) == (0, True), module.__name__


def test_every_public_name_has_its_module() -> None:
    """The package imports its modules lazily (PEP 562): each public name is found where it is defined."""
    assert set(builder._MODULE_OF) == PUBLIC
    for name, module in builder._MODULE_OF.items():
        assert getattr(builder, name) is getattr(importlib.import_module(f"gangsched.builder.{module}"), name)


_EXAMPLES = Path(__file__).parent.parent.parent / "examples"
_BUILDERS = ("gangsched.builder.job", "gangsched.builder.jobset", "gangsched.builder.workloadbuilder")


@pytest.mark.parametrize(
    ("example", "imported"),
    [
        ("eight-gpu", []),
        ("jobs/gang-job.yaml", ["gangsched.builder.job", "gangsched.builder.workloadbuilder"]),
    ],
    ids=["no-jobs", "a-job"],
)
def test_schedule_imports_the_job_builders_only_for_jobs(example: str, imported: list[str]) -> None:
    """`gangsched schedule` reaches the loader through this package; the Job and JobSet builders come in
    only with an input that holds a Job or JobSet (in a fresh interpreter: this one imported them)."""
    assert imported_by_schedule(_EXAMPLES / example, _BUILDERS) == imported
