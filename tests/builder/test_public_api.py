"""The public API others build on: these names are a promise; change them only on purpose."""

from __future__ import annotations

import gangsched.builder as builder

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
