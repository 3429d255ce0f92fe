"""Validation of a WorkloadItem tree, in upstream's two layers (workloadbuilder/validate.go).

1. Structural rules on the blocks the user wrote (upstream's declarative validation of the v1alpha3
   Workload* types): unions with exactly one member, minCount >= 1, at most one topology constraint,
   at most 4 resource claims each naming exactly one source. Skipped with
   `BuildOptions(disable_declarative_validation=True)`, as in-tree controllers whose API server already ran
   them do.
2. The controller's allow-lists and the cross-field rule declarative validation cannot express
   (`all` with Basic), checked on the RESOLVED config, so a default the controller injects is checked too.

Every error is reported at the path the controller recorded for the block, below the caller's root path.
"""

from __future__ import annotations

import re
from typing import Any

from ..api.errors import FieldError, duplicate, forbidden, invalid, required, too_many
from .config import CompositeWorkloadItem, PodGroupConfig, WorkloadItem, join_path, resolve
from .options import BuildOptions, DisruptionModeOption, SchedulingPolicyOption

__all__ = ["validate_tree"]

MAX_RESOURCE_CLAIMS = 4
MAX_TOPOLOGY_CONSTRAINTS = 1
MAX_CHILD_TEMPLATES = 8
MAX_TREE_DEPTH = 4

_DNS_LABEL = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?\Z")
_QUALIFIED_NAME = re.compile(r"^([A-Za-z0-9][-A-Za-z0-9_.]*)?[A-Za-z0-9]\Z")
_DNS_SUBDOMAIN = re.compile(r"^[a-z0-9]([-a-z0-9]*[a-z0-9])?(\.[a-z0-9]([-a-z0-9]*[a-z0-9])?)*\Z")


def _union(path: str, block: Any, members: tuple[str, ...]) -> list[FieldError]:
    """Declarative validation's union rule: exactly one member set. Empty members (`basic: {}`) count."""
    present = [m for m in members if getattr(block, m) is not None]
    names = ", ".join(f"`{m}`" for m in members)
    if not present:
        return [invalid(path, "", f"must specify one of: {names}")]
    if len(present) > 1:
        return [invalid(path, "{" + ", ".join(present) + "}", f"must specify exactly one of: {names}")]
    return []


def _label_key_errors(path: str, key: str | None) -> list[FieldError]:
    if not key:
        return [required(path)]
    prefix, _, name = key.rpartition("/")
    if (prefix and (len(prefix) > 253 or not _DNS_SUBDOMAIN.match(prefix))) or (
        len(name) > 63 or not _QUALIFIED_NAME.match(name)
    ):
        return [invalid(path, key, "name part must consist of alphanumeric characters, '-', '_' or '.'")]
    return []


def _topology_errors(path: str, constraints: Any) -> list[FieldError]:
    if constraints is None or not constraints.topology:
        return []
    topology = constraints.topology
    errors: list[FieldError] = []
    if len(topology) > MAX_TOPOLOGY_CONSTRAINTS:
        errors.append(too_many(join_path(path, "topology"), len(topology), MAX_TOPOLOGY_CONSTRAINTS))
    for i, constraint in enumerate(topology):
        errors.extend(_label_key_errors(join_path(path, "topology", f"[{i}]", "key"), constraint.key))
    return errors


def _claim_errors(path: str, claims: list[Any]) -> list[FieldError]:
    errors: list[FieldError] = []
    if len(claims) > MAX_RESOURCE_CLAIMS:
        errors.append(too_many(path, len(claims), MAX_RESOURCE_CLAIMS))
    seen: set[str] = set()
    for i, claim in enumerate(claims):
        at = join_path(path, f"[{i}]")
        if not claim.name:
            errors.append(required(join_path(at, "name")))
        elif not _DNS_LABEL.match(claim.name):
            errors.append(invalid(join_path(at, "name"), claim.name, "must be a valid DNS label"))
        elif claim.name in seen:
            errors.append(duplicate(join_path(at, "name"), claim.name))
        seen.add(claim.name or "")
        sources = [s for s in ("resourceClaimName", "resourceClaimTemplateName") if getattr(claim, s)]
        if len(sources) != 1:
            detail = "must specify exactly one of: `resourceClaimName`, `resourceClaimTemplateName`"
            errors.append(invalid(at, "{" + ", ".join(sources) + "}" if sources else "", detail))
    return errors


def _declarative(item: WorkloadItem | CompositeWorkloadItem, base: str) -> list[FieldError]:
    """Layer 1: the blocks as the user wrote them (user_config only, as upstream validates its Input)."""
    config = item.user_config
    if config is None:
        return []
    errors: list[FieldError] = []
    policy_path = join_path(base, item.paths.policy)
    if config.policy is not None:
        errors.extend(_union(policy_path, config.policy, ("basic", "gang")))
        gang = config.policy.gang
        count_field = "minCount" if isinstance(item, WorkloadItem) else "minGroupCount"
        count = getattr(gang, count_field) if gang is not None else None
        if count is not None and count < 1:
            errors.append(
                invalid(
                    join_path(policy_path, "gang", count_field), count, "must be greater than or equal to 1"
                )
            )
    errors.extend(_topology_errors(join_path(base, item.paths.constraints), config.constraints))
    if config.disruption_mode is not None:
        errors.extend(
            _union(join_path(base, item.paths.disruption_mode), config.disruption_mode, ("single", "all"))
        )
    if isinstance(config, PodGroupConfig):
        errors.extend(_claim_errors(join_path(base, item.paths.resource_claims), config.resource_claims))
    return errors


def _complex(
    item: WorkloadItem | CompositeWorkloadItem, base: str, options: BuildOptions
) -> list[FieldError]:
    """Layer 2: allow-lists and cross-field rules on the resolved config (upstream's exact messages)."""
    resolved = resolve(item)
    errors: list[FieldError] = []
    policy_path = join_path(base, item.paths.policy)
    mode_path = join_path(base, item.paths.disruption_mode)
    policy, mode = resolved.policy, resolved.disruption_mode
    # Option values are the union members' field names: `basic`, `gang`, `single`, `all`.
    for option in SchedulingPolicyOption:
        if getattr(policy, option.value, None) is not None and option not in options.allowed_policies:
            detail = f"{option.value} scheduling policy is not supported by this controller"
            errors.append(forbidden(policy_path, detail))
    for mode_option in DisruptionModeOption:
        if (
            getattr(mode, mode_option.value, None) is not None
            and mode_option not in options.allowed_disruption_modes
        ):
            detail = f"the disruptionMode `{mode_option.value}` is not supported by this controller"
            errors.append(forbidden(mode_path, detail))
    if policy is not None and policy.basic is not None and mode is not None and mode.all is not None:
        errors.append(
            invalid(
                mode_path, "", "the disruptionMode `all` is not supported with the Basic scheduling policy"
            )
        )
    return errors


def _tree(
    item: WorkloadItem | CompositeWorkloadItem,
    root_path: str,
    options: BuildOptions,
    depth: int,
    names: set[str],
) -> list[FieldError]:
    base = join_path(root_path, item.path)
    errors: list[FieldError] = []
    name_path = join_path(base, item.paths.name)
    if not item.name:
        errors.append(required(name_path, "workload item name cannot be empty"))
    elif item.name in names:
        # Template names are unique across the whole Workload, composite or not.
        errors.append(duplicate(name_path, item.name))
    names.add(item.name)
    if not options.disable_declarative_validation:
        errors.extend(_declarative(item, base))
    errors.extend(_complex(item, base, options))
    if depth > MAX_TREE_DEPTH:
        # Reported once, at the first item too deep; what is below it is not checked further.
        return [*errors, invalid(name_path, depth, f"the tree must be at most {MAX_TREE_DEPTH} levels deep")]
    if isinstance(item, CompositeWorkloadItem):
        if not item.children:
            errors.append(required(base, "a composite group needs at least one child"))
        leaves = [c for c in item.children if isinstance(c, WorkloadItem)]
        composites = [c for c in item.children if isinstance(c, CompositeWorkloadItem)]
        for kind, group in (("podGroupTemplates", leaves), ("compositePodGroupTemplates", composites)):
            if len(group) > MAX_CHILD_TEMPLATES:
                errors.append(too_many(join_path(base, kind), len(group), MAX_CHILD_TEMPLATES))
        for child in item.children:
            errors.extend(_tree(child, root_path, options, depth + 1, names))
    return errors


def validate_tree(
    root: WorkloadItem | CompositeWorkloadItem, root_path: str, options: BuildOptions
) -> list[FieldError]:
    """Every problem of the tree below `root`, reported under `root_path` (e.g. `spec.scheduling`)."""
    return _tree(root, root_path, options, 1, set())
