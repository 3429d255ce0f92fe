"""The six v1.37 workload-scheduling feature gates, parsed with Kubernetes' `--feature-gates` syntax.

Upstream ships all six off; gangsched turns them all on, since exercising them is its purpose. A gate whose
dependency is off is refused with a message in the style of component-base's feature gate validation.

>>> FeatureGates.parse("GenericWorkload=false").enabled("CompositePodGroup")
False
"""

from __future__ import annotations

from msgspec import Struct
from msgspec.structs import fields, replace

__all__ = ["GATE_DEPENDENCIES", "GATE_NAMES", "FeatureGateError", "FeatureGates"]

# Upstream name -> attribute, in the order upstream lists them (beta first, then alpha).
GATE_NAMES: dict[str, str] = {
    "GenericWorkload": "generic_workload",
    "DRAWorkloadResourceClaims": "dra_workload_resource_claims",
    "TopologyAwareWorkloadScheduling": "topology_aware_workload_scheduling",
    "CompositePodGroup": "composite_pod_group",
    "WorkloadWithJob": "workload_with_job",
    "PodGroupPreemptionPolicy": "pod_group_preemption_policy",
}

# A gate may be on only when every gate it depends on is on.
GATE_DEPENDENCIES: dict[str, tuple[str, ...]] = {
    "GenericWorkload": (),
    "DRAWorkloadResourceClaims": ("GenericWorkload",),
    "TopologyAwareWorkloadScheduling": ("GenericWorkload",),
    "CompositePodGroup": ("GenericWorkload", "TopologyAwareWorkloadScheduling"),
    "WorkloadWithJob": ("GenericWorkload",),
    "PodGroupPreemptionPolicy": ("GenericWorkload",),
}


class FeatureGateError(ValueError):
    """A --feature-gates value that cannot be applied."""


class FeatureGates(Struct, frozen=True):
    """Which workload-scheduling features are on. Immutable; passed to whatever needs it, never global.
    A msgspec Struct (equal and hashed by value, as a frozen dataclass): its class is made in C when the
    module is imported, where a dataclass's methods are compiled from source (about a millisecond)."""

    generic_workload: bool = True
    dra_workload_resource_claims: bool = True
    topology_aware_workload_scheduling: bool = True
    composite_pod_group: bool = True
    workload_with_job: bool = True
    pod_group_preemption_policy: bool = True

    def enabled(self, name: str) -> bool:
        """Whether the gate with upstream name `name` is on."""
        return bool(getattr(self, GATE_NAMES[name]))

    def as_dict(self) -> dict[str, bool]:
        return {name: self.enabled(name) for name in GATE_NAMES}

    @classmethod
    def all_off(cls) -> FeatureGates:
        return cls(**{f.name: False for f in fields(cls)})

    @classmethod
    def parse(cls, text: str | None, base: FeatureGates | None = None) -> FeatureGates:
        """Apply `A=true,B=false` on top of `base` (all on by default) and check dependencies."""
        gates = base or cls()
        explicit: set[str] = set()
        for item in (text or "").split(","):
            item = item.strip()
            if not item:
                continue
            name, sep, value = item.partition("=")
            name, value = name.strip(), value.strip()
            if not sep:
                raise FeatureGateError(f"missing bool value for {name}")
            if name not in GATE_NAMES:
                raise FeatureGateError(f"unrecognized feature gate: {name} (known: {', '.join(GATE_NAMES)})")
            if value.lower() not in ("true", "false"):
                raise FeatureGateError(
                    f"invalid value of {name}={value}, err: strconv.ParseBool: "
                    f'parsing "{value}": invalid syntax'
                )
            gates = replace(gates, **{GATE_NAMES[name]: value.lower() == "true"})
            explicit.add(name)
        # Gates on only by gangsched's default follow their dependencies off, so that
        # `GenericWorkload=false` alone means "classic scheduling"; an explicit contradiction is refused.
        for name, needs in GATE_DEPENDENCIES.items():
            if name not in explicit and any(not gates.enabled(n) for n in needs):
                gates = replace(gates, **{GATE_NAMES[name]: False})
        gates.check()
        return gates

    def check(self) -> None:
        """Refuse a combination where an enabled gate depends on a disabled one."""
        for name, needs in GATE_DEPENDENCIES.items():
            if not self.enabled(name):
                continue
            missing = [n for n in needs if not self.enabled(n)]
            if missing:
                raise FeatureGateError(
                    f"feature gate {name} depends on {', '.join(missing)}, which "
                    f"{'is' if len(missing) == 1 else 'are'} disabled"
                )
