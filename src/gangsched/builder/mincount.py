"""Elastic gangs: a Job's changed `gang.minCount` flows to its Workload and PodGroup; nothing else may change.

Upstream splits this in two: the API server refuses an update to `.spec.scheduling` other than
`schedulingPolicy.gang.minCount` (declarative `+k8s:immutable` markers plus validateJobSchedulingUpdate,
"field is immutable"), and the Job controller's syncGangMinCount copies the new minCount into the
controller-owned Workload template and PodGroup. A decrease lets a waiting gang be requeued; an increase
never affects pods already scheduled (both are the scheduler's business: it sees a new minCount).
"""

from __future__ import annotations

import copy
from typing import Any

from lightkube.models import batch_v1, scheduling_v1beta1
from msgspec import Struct

from ..api.errors import FieldError, invalid
from ._objects import job_spec
from .config import join_path, resolve
from .job import job_workload_item, validate_job_scheduling

__all__ = ["MinCountUpdate", "apply_min_count_change", "validate_job_scheduling_update"]

_IMMUTABLE = "field is immutable"
_ROOT = "spec.scheduling"


def _dump(value: Any) -> Any:
    return value.to_dict() if hasattr(value, "to_dict") else value


def validate_job_scheduling_update(new: batch_v1.Job, old: batch_v1.Job) -> list[FieldError]:
    """Errors for an update from `old` to `new` Job: every `.spec.scheduling` change but gang.minCount."""
    new_cfg, old_cfg = job_spec(new).scheduling, job_spec(old).scheduling
    if (new_cfg is None) != (old_cfg is None):
        # It may be neither added nor removed after creation.
        return [invalid(_ROOT, None, _IMMUTABLE)]
    if new_cfg is None or old_cfg is None:
        return []
    errors: list[FieldError] = []
    new_policy, old_policy = new_cfg.schedulingPolicy, old_cfg.schedulingPolicy
    variant = [p is not None and p.gang is not None for p in (new_policy, old_policy)]
    basic = [p is not None and p.basic is not None for p in (new_policy, old_policy)]
    if variant[0] != variant[1] or basic[0] != basic[1]:
        errors.append(invalid(join_path(_ROOT, "schedulingPolicy"), None, _IMMUTABLE))
    for name in ("schedulingConstraints", "disruptionMode", "resourceClaims"):
        new_value = getattr(new_cfg, name)
        old_value = getattr(old_cfg, name)
        new_dump = [_dump(v) for v in new_value] if isinstance(new_value, list) else _dump(new_value)
        old_dump = [_dump(v) for v in old_value] if isinstance(old_value, list) else _dump(old_value)
        if new_dump != old_dump:
            errors.append(invalid(join_path(_ROOT, name), None, _IMMUTABLE))
    return errors + validate_job_scheduling(new)


class MinCountUpdate(Struct):
    """The objects after the change (new copies), and what changed. `decreased` means: requeue the gang."""

    pod_group: scheduling_v1beta1.PodGroup
    workload: scheduling_v1beta1.Workload | None
    old_min_count: int | None
    new_min_count: int | None

    @property
    def changed(self) -> bool:
        return self.old_min_count != self.new_min_count

    @property
    def decreased(self) -> bool:
        return (
            self.changed and self.new_min_count is not None and (self.old_min_count or 0) > self.new_min_count
        )


def apply_min_count_change(
    old: batch_v1.Job,
    new: batch_v1.Job,
    pod_group: scheduling_v1beta1.PodGroup,
    workload: scheduling_v1beta1.Workload | None = None,
) -> MinCountUpdate | list[FieldError]:
    """Apply the update `old` -> `new` of a gang Job to its PodGroup (and Workload, if given).

    Returns field errors, and changes nothing, when the update touches anything but gang.minCount. Never
    mutates its arguments. The new minCount is resolved as the controller does: an unset minCount means
    the (possibly new) parallelism. Basic groups are left alone, as upstream's syncGangMinCount does.
    """
    errors = validate_job_scheduling_update(new, old)
    if errors:
        return errors
    desired = resolve(job_workload_item(new)).policy
    desired_count = desired.gang.minCount if desired is not None and desired.gang is not None else None
    updated_group = copy.deepcopy(pod_group)
    updated_workload = copy.deepcopy(workload)
    gang = updated_group.spec.schedulingPolicy.gang
    old_count = gang.minCount if gang is not None else None
    if gang is None or desired_count is None:
        return MinCountUpdate(updated_group, updated_workload, old_count, old_count)
    gang.minCount = desired_count
    templates = updated_workload.spec.podGroupTemplates if updated_workload is not None else None
    if templates is not None and len(templates) == 1 and templates[0].schedulingPolicy.gang is not None:
        templates[0].schedulingPolicy.gang.minCount = desired_count
    return MinCountUpdate(updated_group, updated_workload, old_count, desired_count)
