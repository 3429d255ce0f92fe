"""What a scheduling cycle decided, as plain values. The scheduler does no I/O: whoever holds the objects
(the in-memory store, the live API adapter) applies a Decision."""

from __future__ import annotations

from typing import Any

from msgspec import Struct

__all__ = [
    "Binding",
    "ClaimReservation",
    "ClaimUnreservation",
    "Condition",
    "ConditionChange",
    "Decision",
    "Eviction",
    "Nomination",
    "Notice",
    "VolumeBinding",
]

ObjectKey = tuple[str, str]

# msgspec Structs, as the engine's other value classes: a Struct class is made in C when its module is
# imported (some 20 us, where a dataclass compiles its __init__, __repr__, __eq__ and, frozen, three more
# methods from source: 0.5-1 ms each, on every start of `gangsched`), and one is made two to four times
# faster (Binding, Notice, Condition and ConditionChange are made for every pod a cycle decides). Nothing
# changes a Decision's values once made. A Decision's lists default to `[]`, which msgspec copies for each
# instance in C (a `default_factory` costs a call for each: a fifth more for every Decision made).
# Those made for every pod or cycle are `gc=False`: they hold only strings, keys and other such values, never
# anything that refers back to them, so no reference cycle can form through one, and left untracked by the
# garbage collector one is made in half the time (a Decision's lists themselves stay tracked).


class Binding(Struct, gc=False):
    pod: ObjectKey
    node: str


class VolumeBinding(Struct, frozen=True):
    """A claim of a placed pod: bind it to PersistentVolume `pv` (static binding), or, with `pv` None,
    provision it for `node` (the claim gets the `volume.kubernetes.io/selected-node` annotation)."""

    pvc: ObjectKey
    pv: str | None
    node: str


class ClaimReservation(Struct, frozen=True):
    """A ResourceClaim of a placed pod: the allocation made for it (API form of `status.allocation`; None
    when it was allocated before) and the consumer added to `status.reservedFor`.

    For the special claim of a pod's extended resources served by DRA (DRAExtendedResource), `create` is the
    claim to create first (API form; `metadata.name` is the name the in-memory store gives it, a live API
    server generates its own from `generateName`) and `request_mappings` the pod's
    `status.extendedResourceClaimStatus.requestMappings`, written once the claim is allocated and reserved."""

    claim: ObjectKey
    allocation: dict[str, Any] | None
    consumer: dict[str, str]
    create: dict[str, Any] | None = None
    request_mappings: tuple[dict[str, str], ...] = ()


class ClaimUnreservation(Struct, frozen=True):
    """DynamicResources' PodGroupPostFilter: remove the PodGroup `consumer` (API form, matched by UID, or by
    resource and name when it has none) from `status.reservedFor` of an allocated claim, keeping the
    allocation (upstream's strategic-merge `$patch: delete` of that entry)."""

    claim: ObjectKey
    consumer: dict[str, str]


class Nomination(Struct, frozen=True):
    pod: ObjectKey
    node: str | None


class Eviction(Struct, frozen=True):
    pod: ObjectKey
    preemptor: str


class Condition(Struct, gc=False):
    type: str
    status: str
    reason: str
    message: str


class ConditionChange(Struct, gc=False):
    """Set `condition` on an object of `kind` ("Pod", "PodGroup", "CompositePodGroup")."""

    kind: str
    key: ObjectKey
    condition: Condition


class Notice(Struct, gc=False):
    """A Kubernetes Event: type Normal/Warning, reason, the object ("Pod ns/name"), message."""

    type: str
    reason: str
    object: str
    message: str


class Decision(Struct, gc=False):
    bindings: list[Binding] = []
    nominations: list[Nomination] = []
    evictions: list[Eviction] = []
    conditions: list[ConditionChange] = []
    events: list[Notice] = []
    # Written before the pods are bound, as kube-scheduler's PreBind does.
    volume_bindings: list[VolumeBinding] = []
    claims: list[ClaimReservation] = []
    # ResourceClaims whose allocation and reservations DynamicResources' PostFilter clears, so that a later
    # cycle may allocate them where the pod can run.
    deallocations: list[ObjectKey] = []
    # Special claims for extended resources left from an earlier cycle, which DynamicResources' PostFilter
    # deletes so that the pod's next cycle makes a new one (extendeddynamicresources.go deleteClaim).
    claim_deletions: list[ObjectKey] = []
    unreservations: list[ClaimUnreservation] = []

    def __bool__(self) -> bool:
        return bool(
            self.bindings
            or self.nominations
            or self.evictions
            or self.conditions
            or self.events
            or self.deallocations
            or self.claim_deletions
            or self.unreservations
        )

    def extend(self, other: Decision) -> None:
        self.bindings.extend(other.bindings)
        self.nominations.extend(other.nominations)
        self.evictions.extend(other.evictions)
        self.conditions.extend(other.conditions)
        self.events.extend(other.events)
        self.volume_bindings.extend(other.volume_bindings)
        self.claims.extend(other.claims)
        self.deallocations.extend(other.deallocations)
        self.claim_deletions.extend(other.claim_deletions)
        self.unreservations.extend(other.unreservations)
