"""What a scheduling cycle decided, as plain values. The scheduler does no I/O: whoever holds the objects
(the in-memory store, the live API adapter) applies a Decision."""

from __future__ import annotations

from dataclasses import dataclass, field

__all__ = ["Binding", "Condition", "ConditionChange", "Decision", "Eviction", "Nomination", "Notice"]

ObjectKey = tuple[str, str]


@dataclass(frozen=True, slots=True)
class Binding:
    pod: ObjectKey
    node: str


@dataclass(frozen=True, slots=True)
class Nomination:
    pod: ObjectKey
    node: str | None


@dataclass(frozen=True, slots=True)
class Eviction:
    pod: ObjectKey
    preemptor: str


@dataclass(frozen=True, slots=True)
class Condition:
    type: str
    status: str
    reason: str
    message: str


@dataclass(frozen=True, slots=True)
class ConditionChange:
    """Set `condition` on an object of `kind` ("Pod", "PodGroup", "CompositePodGroup")."""

    kind: str
    key: ObjectKey
    condition: Condition


@dataclass(frozen=True, slots=True)
class Notice:
    """A Kubernetes Event: type Normal/Warning, reason, the object ("Pod ns/name"), message."""

    type: str
    reason: str
    object: str
    message: str


@dataclass(slots=True)
class Decision:
    bindings: list[Binding] = field(default_factory=list)
    nominations: list[Nomination] = field(default_factory=list)
    evictions: list[Eviction] = field(default_factory=list)
    conditions: list[ConditionChange] = field(default_factory=list)
    events: list[Notice] = field(default_factory=list)

    def __bool__(self) -> bool:
        return bool(self.bindings or self.nominations or self.evictions or self.conditions or self.events)

    def extend(self, other: Decision) -> None:
        self.bindings.extend(other.bindings)
        self.nominations.extend(other.nominations)
        self.evictions.extend(other.evictions)
        self.conditions.extend(other.conditions)
        self.events.extend(other.events)
