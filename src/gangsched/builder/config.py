"""The workloadbuilder's input: scheduling building blocks, where they live, and how they resolve.

A controller describes each group it wants as a `WorkloadItem` (one PodGroupTemplate) or a
`CompositeWorkloadItem` (one CompositePodGroupTemplate with children). Each item carries the user's
building blocks (`user_config`), the controller's defaults (`default_config`), callbacks that default what
only the controller knows (a Job's parallelism), and `path`: where the blocks live in the controller's own
API, so that errors point at the user's fields (`spec.scheduling.schedulingPolicy`), not at ours.

Mirrors upstream's WorkloadItem / SchedulingConfig / resolveSchedulingConfig: user blocks replace default
blocks one by one, then callbacks run on a copy, so nothing the caller passed in is ever mutated.
"""

from __future__ import annotations

import copy
from collections.abc import Callable, Sequence
from typing import Any

from lightkube.models import batch_v1, scheduling_v1alpha3, scheduling_v1beta1
from msgspec import Struct, field

__all__ = [
    "BlockPaths",
    "CompositeGroupConfig",
    "CompositeWorkloadItem",
    "PodGroupConfig",
    "WorkloadItem",
    "join_path",
    "resolve",
]


def join_path(*parts: str) -> str:
    """Join field-path fragments: `join_path("spec", "scheduling", "[0]")` -> `spec.scheduling[0]`."""
    out = ""
    for part in parts:
        if not part:
            continue
        out = out + part if part.startswith("[") or not out else f"{out}.{part}"
    return out


class BlockPaths(Struct, kw_only=True):
    """Where each building block lives, relative to the item's `path` (upstream's PathElements)."""

    name: str = "name"
    policy: str = "schedulingPolicy"
    constraints: str = "schedulingConstraints"
    disruption_mode: str = "disruptionMode"
    resource_claims: str = "resourceClaims"


class PodGroupConfig(Struct, kw_only=True):
    """The building blocks of one PodGroup: the shape of Job `.spec.scheduling` (v1alpha3 Workload* types).

    `None` means "not given"; a resolved config with `policy=None` compiles to Basic, as upstream does.
    """

    policy: scheduling_v1alpha3.WorkloadPodGroupSchedulingPolicy | None = None
    constraints: scheduling_v1alpha3.WorkloadPodGroupSchedulingConstraints | None = None
    disruption_mode: scheduling_v1alpha3.WorkloadPodGroupDisruptionMode | None = None
    resource_claims: list[scheduling_v1alpha3.WorkloadPodGroupResourceClaim] = field(default_factory=list)
    priority_class_name: str | None = None

    @classmethod
    def from_job_scheduling(cls, cfg: batch_v1.JobSchedulingConfiguration | None) -> PodGroupConfig | None:
        """Upstream's MapPodGroupConfig for a Job: None when `.spec.scheduling` is omitted."""
        if cfg is None:
            return None
        return cls(
            policy=cfg.schedulingPolicy,
            constraints=cfg.schedulingConstraints,
            disruption_mode=cfg.disruptionMode,
            resource_claims=list(cfg.resourceClaims or []),
        )


class CompositeGroupConfig(Struct, kw_only=True):
    """The building blocks of one CompositePodGroup (v1beta1 Composite* types)."""

    policy: scheduling_v1beta1.CompositePodGroupSchedulingPolicy | None = None
    constraints: scheduling_v1beta1.CompositePodGroupSchedulingConstraints | None = None
    disruption_mode: scheduling_v1beta1.CompositeDisruptionMode | None = None
    priority_class_name: str | None = None


class WorkloadItem(Struct, kw_only=True):
    """One leaf group: compiles to a PodGroupTemplate named `name`.

    Example (what the Job controller builds for Job `trainer` with parallelism 4)::

        WorkloadItem(
            name="trainer-pgt-0",
            user_config=PodGroupConfig.from_job_scheduling(job.spec.scheduling),
            default_config=PodGroupConfig(policy=WorkloadPodGroupSchedulingPolicy(basic={})),
            callbacks=[default_gang_min_count(4)],
        )
    """

    name: str
    user_config: PodGroupConfig | None = None
    default_config: PodGroupConfig | None = None
    callbacks: Sequence[Callable[[PodGroupConfig], None]] = ()
    path: str = ""
    paths: BlockPaths = field(default_factory=BlockPaths)


class CompositeWorkloadItem(Struct, kw_only=True):
    """One composite group: compiles to a CompositePodGroupTemplate with `children` below it."""

    name: str
    children: list[WorkloadItem | CompositeWorkloadItem] = field(default_factory=list)
    user_config: CompositeGroupConfig | None = None
    default_config: CompositeGroupConfig | None = None
    callbacks: Sequence[Callable[[CompositeGroupConfig], None]] = ()
    path: str = ""
    paths: BlockPaths = field(default_factory=BlockPaths)


def _overlay(default: Any, user: Any, factory: Callable[[], Any]) -> Any:
    """Defaults, then every block the user gave replaces the default block (upstream's merge rules)."""
    resolved = copy.deepcopy(default) if default is not None else factory()
    if user is None:
        return resolved
    for name in ("policy", "constraints", "disruption_mode"):
        value = getattr(user, name)
        if value is not None:
            setattr(resolved, name, copy.deepcopy(value))
    if getattr(user, "resource_claims", None):
        resolved.resource_claims = copy.deepcopy(user.resource_claims)
    if user.priority_class_name:
        resolved.priority_class_name = user.priority_class_name
    return resolved


def resolve(item: WorkloadItem | CompositeWorkloadItem) -> Any:
    """The item's effective config: defaults, overlaid by user blocks, then the callbacks. Pure."""
    if isinstance(item, WorkloadItem):
        leaf: PodGroupConfig = _overlay(item.default_config, item.user_config, PodGroupConfig)
        for leaf_callback in item.callbacks:
            leaf_callback(leaf)
        return leaf
    composite: CompositeGroupConfig = _overlay(item.default_config, item.user_config, CompositeGroupConfig)
    for composite_callback in item.callbacks:
        composite_callback(composite)
    return composite
