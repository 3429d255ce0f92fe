"""`gangsched build`: print what Jobs and JobSets expand into, as the Job (and JobSet) controllers would.

The click command lives in cli.py with the other commands; this is its body, so that it can be called
(and tested) without click.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from ..api.errors import Problem
from ..api.gates import FeatureGates
from ..api.inputs import read_inputs
from ..api.kinds import kind_info
from ..api.loader import Loaded
from ..api.validation import validate
from .expand import expand_jobs
from .output import dump_json, dump_yaml

__all__ = ["build_manifests", "expanded_inputs"]


def _key(obj: Any) -> tuple[str, str, str]:
    meta = obj.metadata
    return (kind_info(obj).kind, meta.namespace or "", meta.name or "") if meta is not None else ("", "", "")


def expanded_inputs(paths: Sequence[str], gates: FeatureGates) -> tuple[list[Any], list[Problem]]:
    """(objects, problems): the inputs loaded, defaulted and validated, every Job and JobSet expanded
    (expand_jobs), and the result validated again as a whole when anything was expanded, so that what
    `build` prints is what `gangsched validate` accepts and what `schedule` runs on is what a cluster would
    hold. Objects are empty when there is any problem (nothing half-built)."""
    result = read_inputs(paths, gates)
    if result.problems:
        return [], list(result.problems)
    files = {id(item.obj): item.file for item in result.objects}
    objects, problems = expand_jobs(
        [item.obj for item in result.objects], gates=gates, file_of=lambda obj: files.get(id(obj), "")
    )
    if problems:
        return [], problems
    if len(objects) == len(result.objects) and all(
        obj is item.obj for obj, item in zip(objects, result.objects, strict=True)
    ):
        return objects, []  # no Job or JobSet expanded anything: read_inputs validated these already
    # Check the created objects with the same rules, each under the file of the Job or JobSet it came from
    # (expansions follow their source). Expanded Jobs are copies, so given objects are recognised by
    # kind/namespace/name, not identity.
    given = {_key(item.obj): item.file for item in result.objects}
    loaded: list[Loaded] = []
    file = ""
    for order, obj in enumerate(objects):
        file = given.get(_key(obj), file)
        loaded.append(Loaded(obj, kind_info(obj), file, order))
    problems = validate(loaded, gates)
    return ([], problems) if problems else (objects, [])


def build_manifests(
    paths: Sequence[str], gates: FeatureGates, output: str = "yaml"
) -> tuple[str, list[Problem]]:
    """(text, problems) for `gangsched build`: text is empty when there is any problem (nothing half-built).
    `output` is `yaml` (multi-document) or `json` (a v1 List)."""
    objects, problems = expanded_inputs(paths, gates)
    if problems:
        return "", problems
    return (dump_json(objects) + "\n" if output == "json" else dump_yaml(objects)), []
