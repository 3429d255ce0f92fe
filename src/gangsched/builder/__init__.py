"""From scheduling intent to scheduler-facing objects: a Python workloadbuilder and the Job controller's part.

For controllers of your own, the workloadbuilder (upstream's k8s.io/component-helpers/.../workloadbuilder)::

    from gangsched.builder import (Builder, BuildOptions, PodGroupConfig, SchedulingPolicyOption,
                                   DisruptionModeOption, WorkloadItem, default_gang_min_count)

    item = WorkloadItem(name="trainer-pgt-0", user_config=PodGroupConfig(policy=my_policy),
                        callbacks=[default_gang_min_count(4)], path="spec.scheduling")
    builder = Builder(item, BuildOptions(name="trainer-wl", namespace="ml", owner=owner_ref,
                                         allowed_policies=[SchedulingPolicyOption.GANG],
                                         allowed_disruption_modes=[DisruptionModeOption.SINGLE]))
    errors = builder.validate()                 # [] or FieldErrors at spec.scheduling.<field>
    workload = builder.build_workload()
    pod_group = builder.new_pod_group("trainer-pg", "trainer-pgt-0")

For Jobs and JobSets, what the v1.37 controllers create::

    expansion = build_job(job)                  # Job -> Workload, PodGroup, pods (or .errors)
    objects, problems = expand_jobs(objects)    # every Job / JobSet in a list, in place
    update = apply_min_count_change(old_job, new_job, pod_group)   # elastic gangs: only minCount moves

Everything is pure: inputs are never mutated, nothing does I/O, the same input gives the same names.
"""

from __future__ import annotations

import importlib
from typing import TYPE_CHECKING, Any

if TYPE_CHECKING:
    from .command import build_manifests
    from .config import BlockPaths, CompositeGroupConfig, CompositeWorkloadItem, PodGroupConfig, WorkloadItem
    from .expand import expand_jobs
    from .job import (
        JOB_BUILD_OPTIONS,
        JobExpansion,
        build_job,
        default_gang_min_count,
        job_builder,
        job_workload_item,
        pod_group_template_name,
        validate_job_scheduling,
    )
    from .jobset import JobSetExpansion, build_jobset
    from .mincount import MinCountUpdate, apply_min_count_change, validate_job_scheduling_update
    from .names import generate_pod_group_name, generate_workload_name
    from .options import BuildOptions, DisruptionModeOption, SchedulingPolicyOption
    from .output import dump_json, dump_yaml, manifest
    from .workloadbuilder import Builder, BuildError

__all__ = [
    "JOB_BUILD_OPTIONS",
    "BlockPaths",
    "BuildError",
    "BuildOptions",
    "Builder",
    "CompositeGroupConfig",
    "CompositeWorkloadItem",
    "DisruptionModeOption",
    "JobExpansion",
    "JobSetExpansion",
    "MinCountUpdate",
    "PodGroupConfig",
    "SchedulingPolicyOption",
    "WorkloadItem",
    "apply_min_count_change",
    "build_job",
    "build_jobset",
    "build_manifests",
    "default_gang_min_count",
    "dump_json",
    "dump_yaml",
    "expand_jobs",
    "generate_pod_group_name",
    "generate_workload_name",
    "job_builder",
    "job_workload_item",
    "manifest",
    "pod_group_template_name",
    "validate_job_scheduling",
    "validate_job_scheduling_update",
]

# Where each public name is defined. The package imports none of its modules itself: `gangsched schedule`
# reaches the loader's step (command.expanded_inputs) through this package, and the Job and JobSet builders
# (the workloadbuilder, its validation, lightkube's scheduling models) are imported only when an input holds
# a Job or JobSet (expand.py), or when a name below is first asked for (PEP 562).
_NAMES_IN = {
    "command": ["build_manifests"],
    "config": [
        "BlockPaths",
        "CompositeGroupConfig",
        "CompositeWorkloadItem",
        "PodGroupConfig",
        "WorkloadItem",
    ],
    "expand": ["expand_jobs"],
    "job": [
        "JOB_BUILD_OPTIONS",
        "JobExpansion",
        "build_job",
        "default_gang_min_count",
        "job_builder",
        "job_workload_item",
        "pod_group_template_name",
        "validate_job_scheduling",
    ],
    "jobset": ["JobSetExpansion", "build_jobset"],
    "mincount": ["MinCountUpdate", "apply_min_count_change", "validate_job_scheduling_update"],
    "names": ["generate_pod_group_name", "generate_workload_name"],
    "options": ["BuildOptions", "DisruptionModeOption", "SchedulingPolicyOption"],
    "output": ["dump_json", "dump_yaml", "manifest"],
    "workloadbuilder": ["Builder", "BuildError"],
}
_MODULE_OF = {name: module for module, names in _NAMES_IN.items() for name in names}


def __getattr__(name: str) -> Any:
    """A public name, imported from its module on first use and kept here from then on."""
    module = _MODULE_OF.get(name)
    if module is None:
        raise AttributeError(f"module {__name__!r} has no attribute {name!r}")
    value = getattr(importlib.import_module(f".{module}", __name__), name)
    globals()[name] = value
    return value
