"""Replace every Job and JobSet in a list of objects by what its controllers would create from it.

Used by `gangsched build` and `gangsched schedule` (DESIGN.md: "Jobs are expanded by the builder").
A Job that already has objects it controls in the input (pods, a Workload, a PodGroup) is not new, and
is left as it is: upstream's Job controller creates scheduling objects only for a Job that has never
started (isNewJob). That is also what makes `gangsched build` output safe to feed back in.
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from typing import Any

from ..api.defaults import apply_defaults
from ..api.errors import Problem
from ..api.gates import FeatureGates
from ..api.kinds import kind_info
from ._objects import metadata_of
from .names import object_uid

__all__ = ["expand_jobs"]


def _controlled_uids(objects: Sequence[Any]) -> set[str]:
    """UIDs of every object that some object in the input names as its controller."""
    uids: set[str] = set()
    for obj in objects:
        meta = getattr(obj, "metadata", None)
        for ref in (meta.ownerReferences or []) if meta is not None else []:
            if ref.controller:
                uids.add(ref.uid)
    return uids


def _uid(obj: Any, kind: str) -> str:
    """The UID the builder will give the object (read only: the input is not touched)."""
    meta = obj.metadata
    if meta is None:
        return object_uid(kind, "default", "")
    return meta.uid or object_uid(kind, meta.namespace or "default", meta.name or "")


def expand_jobs(
    objects: Sequence[Any],
    *,
    gates: FeatureGates | None = None,
    file_of: Callable[[Any], str] | None = None,
) -> tuple[list[Any], list[Problem]]:
    """(objects, problems): each new Job / JobSet replaced in place by itself and what it expands into.

    Objects keep their input order (it stands for creation order); expanded objects follow their Job.
    Invalid Jobs/JobSets produce Problems and nothing else (they are kept as they are, unexpanded).
    `gates` default to all on; WorkloadWithJob off gives pods without scheduling objects, as does
    CompositePodGroup off for JobSets. `file_of` names the input file of an object, for Problems.
    Does not mutate the input objects.

    >>> out, problems = expand_jobs([job])     # doctest: +SKIP
    """
    gates = gates or FeatureGates()
    with_job = gates.enabled("WorkloadWithJob")
    with_composite = with_job and gates.enabled("CompositePodGroup")
    controlled = _controlled_uids(objects)
    out: list[Any] = []
    problems: list[Problem] = []
    source: dict[int, Any] = {}  # id of a created object -> the Job or JobSet it came from
    for obj in objects:
        kind = kind_info(obj).kind
        if kind == "Job" and obj.spec is not None and _uid(obj, "Job") not in controlled:
            # here: an input without Jobs never imports the builders (__init__.py), nor batch_v1 (kinds.py)
            from .job import build_job

            expansion: Any = build_job(obj, workload_with_job=with_job)
        elif kind == "JobSet" and _uid(obj, "JobSet") not in controlled:
            from .jobset import build_jobset

            expansion = build_jobset(obj, composite_pod_groups=with_composite)
        else:
            out.append(obj)
            continue
        if expansion.errors:
            meta = metadata_of(expansion.job if kind == "Job" else expansion.jobset)
            file = file_of(obj) if file_of is not None else ""
            problems.extend(
                Problem(file, kind, meta.namespace or "", meta.name or "", e) for e in expansion.errors
            )
            out.append(obj)
            continue
        created = expansion.objects()
        source.update((id(o), obj) for o in created)
        out.extend(created)

    def source_file(obj: Any) -> str:
        """A created object's problems name the file of the Job or JobSet it came from."""
        return file_of(source.get(id(obj), obj)) if file_of is not None else ""

    problems.extend(_default_created(objects, out, source_file))
    return out, problems


def _default_created(
    given: Sequence[Any], out: list[Any], file_of: Callable[[Any], str] | None
) -> list[Problem]:
    """The API server defaults what controllers create (schedulerName, priority, disruptionMode...).

    Only created objects are defaulted (the given ones are never mutated); PriorityClasses from the input
    are passed along so that priorityClassName resolves as it does for everything else.
    """
    given_ids = {id(o) for o in given}
    created = [o for o in out if id(o) not in given_ids]
    classes = [o for o in given if kind_info(o).kind == "PriorityClass"]
    problems: list[Problem] = []
    for obj, error in apply_defaults([*classes, *created]):
        meta = metadata_of(obj)
        file = file_of(obj) if file_of is not None else ""
        problems.append(Problem(file, kind_info(obj).kind, meta.namespace or "", meta.name or "", error))
    return problems
