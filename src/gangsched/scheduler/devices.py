"""The devices of a cluster as the DynamicResources plugin sees them, and the structured allocator.

`DeviceCatalog` reads DeviceClasses and ResourceSlices once per store generation: slices grouped into pools
(only a pool's newest generation counts; a pool with fewer slices than `resourceSliceCount` is incomplete),
each slice with the nodes it serves (`nodeName`, a one-term `nodeSelector`, `allNodes`, or per device), each
pool with its shared counters, and the devices already allocated to claims. `allocate` is the structured
allocator (k8s.io/dynamic-resource-allocation, structured/internal/incubating/allocator_incubating.go):
claims in order, requests in order, for each request the
first `firstAvailable` alternative that works, devices tried pool by pool in slice order with backtracking,
so that `count` devices are found that match the class's and the request's CEL selectors, are not in use,
whose NoSchedule and NoExecute taints the request tolerates, and that satisfy the claim's `matchAttribute`
constraints. `allocationMode: All` takes every matching device on the node (at least one, none in use, none
with a taint the request does not tolerate, no incomplete pool).

Device taints (DRADeviceTaints, GA and on in v1.37) are a device's own `taints` plus those of every
DeviceTaintRule whose selector names its driver, pool and device (unset fields match any; a rule without a
selector matches nothing), as the scheduler's ResourceSlice tracker adds them
(k8s.io/dynamic-resource-allocation/resourceslice/tracker applyPatches; DRADeviceTaintRules, GA and on).

Pools are visited sorted by (driver, pool), pools with a device that has binding conditions last, slices by
name, as upstream's GatherPools and buildPool order them.

The allocator followed is upstream's "incubating" one (structured/internal/incubating), which
structured.NewAllocator picks with v1.37's default gates: shared counters and per-device node selection
(DRAPartitionableDevices, device_counters.py), `distinctAttribute` and capacity requests on devices
allocated whole (DRAConsumableCapacity). Devices with `bindingConditions` or `allowMultipleAllocations` are
never allocated (`refused`); a node where only they would do says so, naming the field.
"""

from __future__ import annotations

from collections import Counter
from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from fractions import Fraction
from typing import Any

import numpy as np

from ..api.cel import CelError, DeviceView, compile_selector, device_context, evaluate, maps_used
from ..api.quantity import QuantityError, parse_quantity
from .device_counters import Consumption, CounterLedger, consumption, counter_sets
from .extended import resource_classes
from .plugins import BoolArray
from .plugins.node_affinity import term_matches
from .snapshot import Snapshot

__all__ = ["Allocation", "AllocationError", "DeviceCatalog", "DeviceID", "Want", "allocate"]

DeviceID = tuple[str, str, str]  # driver, pool, device
# A device toleration as (key, operator, value, effect); what a request wants of a device: its class's and
# its own CEL selectors, and its tolerations.
Toleration = tuple[str, str, str, str]
Want = tuple[tuple[str, ...], tuple[Toleration, ...]]
# Only these taint effects keep a device from being allocated; None and unknown effects are ignored.
BLOCKING_EFFECTS = frozenset({"NoSchedule", "NoExecute"})
MAX_STEPS = 200_000  # upstream stops a search after a timeout; this bounds it by work instead


class AllocationError(Exception):
    """The claims cannot be allocated anywhere for a reason other than a lack of devices (upstream returns
    these as the Filter's status message)."""


@dataclass(slots=True)
class _Slice:
    obj: Any
    driver: str
    pool: str
    nodes: BoolArray
    local: str | None  # nodeName of a node-local slice
    # perDeviceNodeSelection: the nodes each device serves, by device name (None: the slice's nodes)
    device_nodes: dict[str, BoolArray] | None = None
    binding: bool = False  # a device has bindingConditions (its pool goes last on the nodes it serves)


@dataclass(slots=True)
class _Pool:
    driver: str
    name: str
    slices: list[_Slice]
    incomplete: bool
    counters: dict[tuple[str, str], Fraction] = field(default_factory=dict)  # (set, counter) -> value
    consumers: dict[DeviceID, Consumption] = field(default_factory=dict)  # devices consuming counters
    invalid: str | None = None  # why no device of the pool is allocated (device_counters.counter_sets)
    repeats: bool = False  # a device name appears in two of its slices (invalid where both serve a node)


_Candidate = tuple[_Pool, _Slice, Any]  # a device with its pool and slice


@dataclass(slots=True)
class Allocation:
    """One claim's allocation: (request, driver, pool, device) results, the nodes it binds to, and per
    result request name the tolerations of that request or subrequest (API form), which upstream copies
    into each result (allocator_stable.go Allocate: `Tolerations: lookupRequest(claim).tolerations()`)."""

    results: list[tuple[str, DeviceID]] = field(default_factory=list)
    node_selector: dict[str, Any] | None = None
    tolerations: dict[str, list[dict[str, Any]]] = field(default_factory=dict)
    admin: frozenset[str] = frozenset()  # result request names with adminAccess

    def held(self) -> list[DeviceID]:
        """The devices the allocation keeps from other claims: not those taken with admin access
        (dynamicresources/allocateddevices.go skips them)."""
        return [dev for req, dev in self.results if req not in self.admin]

    def to_status(self) -> dict[str, Any]:
        """As ResourceClaim.status.allocation (AllocationResult) in API form."""
        results = []
        for req, (d, p, dev) in self.results:
            result: dict[str, Any] = {"request": req, "driver": d, "pool": p, "device": dev}
            if req in self.admin:
                result["adminAccess"] = True
            if self.tolerations.get(req):
                result["tolerations"] = self.tolerations[req]
            results.append(result)
        out: dict[str, Any] = {"devices": {"results": results}}
        if self.node_selector is not None:
            out["nodeSelector"] = self.node_selector
        return out


class DeviceCatalog:
    """DeviceClasses, pools and devices for one snapshot of nodes. Never changed after building, except
    `allocated`, the devices held by claims in the store."""

    def __init__(self, store: Any, snap: Snapshot) -> None:
        self.snap = snap
        self.classes: dict[str, Any] = {c.metadata.name: c for c in store.list("DeviceClass")}
        # extended resource name -> the DeviceClass serving it (DRAExtendedResource, extended.py)
        self.extended: dict[str, Any] = resource_classes(self.classes.values())
        newest: dict[tuple[str, str], int] = {}
        slices = [s for s in store.list("ResourceSlice") if s.spec is not None]
        for s in slices:
            key = (s.spec.driver, s.spec.pool.name)
            newest[key] = max(newest.get(key, s.spec.pool.generation), s.spec.pool.generation)
        pools: dict[tuple[str, str], _Pool] = {}
        for s in slices:
            key = (s.spec.driver, s.spec.pool.name)
            if s.spec.pool.generation != newest[key]:
                continue
            pool = pools.setdefault(key, _Pool(key[0], key[1], [], False))
            pool.slices.append(self._slice(s, key))
        for pool in pools.values():
            count = pool.slices[0].obj.spec.pool.resourceSliceCount
            pool.incomplete = len(pool.slices) < count
            pool.slices.sort(key=lambda sl: sl.obj.metadata.name)
            devices = [(sl, d) for sl in pool.slices for d in sl.obj.spec.devices or ()]
            pool.counters, pool.invalid = counter_sets(
                (sl.obj for sl in pool.slices), (d for _, d in devices)
            )
            pool.consumers = {
                (sl.driver, sl.pool, d.name): consumption(d) for sl, d in devices if d.consumesCounters
            }
            pool.repeats = len({d.name for _, d in devices}) < len(devices)
        self.pools = [pools[k] for k in sorted(pools)]
        self.taint_rules = [
            r.spec for r in store.list("DeviceTaintRule") if r.spec is not None and r.spec.taint is not None
        ]
        self._taints: dict[DeviceID, tuple[Any, ...]] = {}
        self.use = DeviceUse(self)
        self.held: dict[tuple[str, str], tuple[DeviceID, ...]] = {}  # claim -> devices counted for it
        for claim in store.list("ResourceClaim"):
            self.claim_changed((claim.metadata.namespace or "", claim.metadata.name), claim)
        self._views: dict[DeviceID, DeviceView] = {}
        self._contexts: dict[tuple[DeviceID, frozenset[tuple[str, str]], frozenset[str]], Any] = {}
        self._matches: dict[tuple[DeviceID, tuple[str, ...]], bool] = {}
        self._on_node: dict[int, list[tuple[_Pool, list[_Slice]]]] = {}
        self._refused_on: dict[int, bool] = {}

    def claim_changed(self, key: tuple[str, str], claim: Any | None) -> None:
        """The devices a stored claim holds (none once deleted or deallocated) are in use."""
        self.use.remove(self.held.pop(key, ()))
        devices = tuple(allocated_devices(claim)) if claim is not None else ()
        if devices:
            self.held[key] = devices
            self.use.add(devices)

    def node_local_matches(self, want: Want) -> dict[DeviceID, int] | None:
        """Devices a request with `want` can take (`usable`) with the one node each is on, when every such
        device is in a complete node-local pool; None otherwise (the allocator must look node by node)."""
        out: dict[DeviceID, int] = {}
        if any(pool.invalid or pool.repeats for pool in self.pools):
            return None  # a failed search there reports the invalid pool
        for pool in self.pools:
            for sl in pool.slices:
                for device in sl.obj.spec.devices or []:
                    if not self.usable(want, sl, device):
                        continue
                    if pool.incomplete or pool.invalid or sl.local is None or sl.binding:
                        return None
                    if device.consumesCounters or refused(device):
                        return None  # counted against shared counters, or refused: the search decides
                    node = self.snap.index.get(sl.local)
                    if node is not None:
                        out[(sl.driver, sl.pool, device.name)] = node
        return out

    def _slice(self, s: Any, key: tuple[str, str]) -> _Slice:
        spec = s.spec
        devices = spec.devices or []
        binding = any(d.bindingConditions for d in devices)
        if spec.perDeviceNodeSelection and not (spec.nodeName or spec.allNodes or spec.nodeSelector):
            # each device names its nodes; the slice serves a node when one of its devices does
            # (pools_incubating.go GatherPools)
            per_device = {d.name: self._nodes_of(d.nodeName, d.allNodes, d.nodeSelector) for d in devices}
            nodes = np.zeros(len(self.snap), dtype=bool)
            for mask in per_device.values():
                nodes |= mask
            return _Slice(s, key[0], key[1], nodes, None, per_device, binding)
        nodes = self._nodes_of(spec.nodeName, spec.allNodes, spec.nodeSelector)
        return _Slice(s, key[0], key[1], nodes, spec.nodeName or None, None, binding)

    def _nodes_of(self, node_name: str | None, all_nodes: bool | None, selector: Any) -> BoolArray:
        """The nodes a slice (or, with perDeviceNodeSelection, a device) serves (NodeMatches)."""
        n = len(self.snap)
        if node_name:
            mask = np.zeros(n, dtype=bool)
            if node_name in self.snap.index:
                mask[self.snap.index[node_name]] = True
            return mask
        if all_nodes:
            return np.ones(n, dtype=bool)
        if selector is not None:
            mask = np.zeros(n, dtype=bool)
            for term in selector.nodeSelectorTerms or []:
                mask |= term_matches(self.snap, term)
            return mask
        return np.zeros(n, dtype=bool)  # nothing known set: some future extension, serves no node

    def on_node(self, node: int) -> list[tuple[_Pool, list[_Slice]]]:
        """Pools with at least one slice serving `node`, with those slices (GatherPools)."""
        if not self._on_node:  # one pass over the slices for every node, in pool then slice order
            by_node: dict[int, dict[int, list[_Slice]]] = {}
            for p, pool in enumerate(self.pools):
                for sl in pool.slices:
                    for n in np.flatnonzero(sl.nodes):
                        by_node.setdefault(int(n), {}).setdefault(p, []).append(sl)
            # pools with a device that has bindingConditions go last (GatherPools), each part in pool order
            self._on_node = {
                n: sorted(
                    ((self.pools[p], sls) for p, sls in pools.items()),
                    key=lambda pool_slices: any(sl.binding for sl in pool_slices[1]),
                )
                for n, pools in by_node.items()
            }
            self._on_node.setdefault(-1, [])
        return self._on_node.get(node, [])

    def invalid_on(self, pool: _Pool, slices: list[_Slice]) -> str | None:
        """Why the pool allocates nothing on a node that `slices` of it serve: its counters (`invalid`), or a
        device name twice among those slices (pools_incubating.go buildPool, validateDeviceNames)."""
        if pool.invalid is not None or not pool.repeats:
            return pool.invalid
        seen: set[str] = set()
        for sl in slices:
            for device in sl.obj.spec.devices or ():
                if device.name in seen:
                    return f"duplicate device name {device.name}"
                seen.add(device.name)
        return None

    def refused_on(self, node: int) -> bool:
        """Whether a device gangsched refuses (`refused`) serves `node`."""
        found = self._refused_on.get(node)
        if found is None:
            found = self._refused_on[node] = any(
                refused(d) is not None and serves(sl, d, node)
                for _, slices in self.on_node(node)
                for sl in slices
                for d in sl.obj.spec.devices or ()
            )
        return found

    def taints(self, sl: _Slice, device: Any) -> tuple[Any, ...]:
        """The device's taints: its own, then those of the DeviceTaintRules selecting it."""
        dev_id = (sl.driver, sl.pool, device.name)
        found = self._taints.get(dev_id)
        if found is None:
            own = tuple(device.taints or ())
            ruled = tuple(
                rule.taint
                for rule in self.taint_rules
                if (selector := rule.deviceSelector) is not None
                and selector.driver in (None, sl.driver)
                and selector.pool in (None, sl.pool)
                and selector.device in (None, device.name)
            )
            found = self._taints[dev_id] = own + ruled
        return found

    def tainted_against(self, tolerations: tuple[Toleration, ...], sl: _Slice, device: Any) -> bool:
        """Whether a NoSchedule or NoExecute taint of the device is tolerated by none of `tolerations`
        (allocator_stable.go taintPreventsAllocation)."""
        return any(
            taint.effect in BLOCKING_EFFECTS and not any(tolerates(t, taint) for t in tolerations)
            for taint in self.taints(sl, device)
        )

    def usable(self, want: Want, sl: _Slice, device: Any) -> bool:
        """The device matches the selectors and carries no taint the tolerations leave out (selectors first:
        a CEL error surfaces even on a tainted device, as upstream checks selectors before taints)."""
        return self.selectors_match(want[0], sl, device) and not self.tainted_against(want[1], sl, device)

    def selectors_match(self, expressions: tuple[str, ...], sl: _Slice, device: Any) -> bool:
        """Every CEL selector matches the device (cached: devices and selectors do not change)."""
        dev_id = (sl.driver, sl.pool, device.name)
        key = (dev_id, expressions)
        cached = self._matches.get(key)
        if cached is not None:
            return cached
        view = self._views.get(dev_id)
        if view is None:
            view = self._views[dev_id] = DeviceView(sl.driver, device)
        result = True
        for i, expression in enumerate(expressions):
            try:
                _, lookups = compile_selector(expression)
                needs = maps_used(expression)
                ctx_key = (dev_id, lookups, needs)
                ctx = self._contexts.get(ctx_key)
                if ctx is None:
                    ctx = self._contexts[ctx_key] = device_context(view, lookups, needs)
                if not evaluate(expression, ctx):
                    result = False
                    break
            except CelError as e:
                raise AllocationError(f"selector #{i} on device {'/'.join(dev_id)}: {e}") from None
        self._matches[key] = result
        return result


class DeviceUse:
    """Devices in use: held by claims allocated in the store, or taken by allocations pending in the current
    cycles; a device is in use while anyone holds it. For the requests asked about (`Want`: selectors and
    tolerations), it keeps the number of free usable devices per node in step, so that a one-request claim
    is checked on every node at once."""

    def __init__(self, catalog: DeviceCatalog) -> None:
        self.catalog = catalog
        self.count: dict[DeviceID, int] = {}
        self._free: dict[Want, Any] = {}  # want -> free usable devices per node
        self._followers: dict[DeviceID, list[tuple[Want, int]]] = {}  # device -> (want, node)
        self._matching: dict[Want, dict[int, list[DeviceID]]] = {}  # want -> node -> devices

    def __contains__(self, device: object) -> bool:
        return device in self.count

    def _shift(self, device: DeviceID, sign: int) -> None:
        for want, node in self._followers.get(device, ()):
            self._free[want][node] += sign

    def add(self, devices: Iterable[DeviceID]) -> None:
        for d in devices:
            n = self.count.get(d, 0)
            self.count[d] = n + 1
            if n == 0:
                self._shift(d, -1)

    def remove(self, devices: Iterable[DeviceID]) -> None:
        for d in devices:
            n = self.count.get(d, 0)
            if n <= 1:
                self.count.pop(d, None)
                if n == 1:
                    self._shift(d, 1)
            else:
                self.count[d] = n - 1

    def free_per_node(self, want: Want) -> Any | None:
        """Free devices usable for `want`, per node (numpy int64), or None when some usable device is not
        node-local (see DeviceCatalog.node_local_matches)."""
        free = self._free.get(want)
        if free is None and want not in self._free:
            matches = self.catalog.node_local_matches(want)
            if matches is None:
                self._free[want] = None
                return None
            free = np.zeros(len(self.catalog.snap), dtype=np.int64)
            per_node: dict[int, list[DeviceID]] = {}
            self._matching[want] = per_node
            for device, node in matches.items():
                per_node.setdefault(node, []).append(device)
                self._followers.setdefault(device, []).append((want, node))
                if device not in self.count:
                    free[node] += 1
            self._free[want] = free
        return free

    def first_free(self, want: Want, node: int, count: int) -> list[DeviceID] | None:
        """The first `count` free devices usable for `want` on `node`, in the allocator's order (after
        free_per_node said they are there)."""
        out = [d for d in self._matching.get(want, {}).get(node, []) if d not in self.count][:count]
        return out if len(out) == count else None


def serves(sl: _Slice, device: Any, node: int) -> bool:
    """Whether the device of a slice serving `node` serves it too: with perDeviceNodeSelection only the
    nodes the device names (allocator_incubating.go isSelectable)."""
    return sl.device_nodes is None or bool(sl.device_nodes[device.name][node])


def capacity_fits(requests: tuple[tuple[str, Fraction], ...], device: Any) -> bool:
    """DRAConsumableCapacity's check on a device allocated whole (CmpRequestOverCapacity without a share):
    every capacity the request asks for (`capacity.requests`) is one the device has, no larger than it."""
    capacity = device.capacity or {}
    for name, amount in requests:
        if name not in capacity:
            return False
        raw = capacity[name]
        value = raw.get("value") if isinstance(raw, dict) else getattr(raw, "value", None)
        try:
            if amount > parse_quantity(value if value is not None else 0):
                return False
        except QuantityError:
            return False
    return True


def refused(device: Any) -> str | None:
    """The field of a device that gangsched does not allocate yet, or None. DRADeviceBindingConditions
    (beta, on in v1.37): upstream allocates such a device and PreBind waits until its driver reports the
    conditions; DRAConsumableCapacity (beta, on): a device with `allowMultipleAllocations` is shared between
    claims by capacity, each allocation with a share ID. Neither is modelled, so such a device is never
    allocated, rather than allocated as if the field were absent (docs/volumes-and-devices.md)."""
    if device.bindingConditions or device.bindingFailureConditions:
        return "bindingConditions"
    if device.allowMultipleAllocations:
        return "allowMultipleAllocations"
    return None


def refusal_message(fields: Iterable[str]) -> str:
    """The Filter's reason on a node where the claims can be allocated only with refused devices."""
    named = sorted(set(fields))
    verb = "is" if len(named) == 1 else "are"
    listed = " and ".join(f"spec.devices[].{f}" for f in named)
    return f"cannot allocate all claims: ResourceSlice {listed} {verb} not supported by gangsched yet"


def tolerates(toleration: Toleration, taint: Any) -> bool:
    """resourceclaim.ToleratesTaint: an empty effect or key matches any; `Exists` any value, `Equal` (the
    default) the same value; an unknown operator nothing."""
    key, operator, value, effect = toleration
    if effect and effect != taint.effect:
        return False
    if key and key != taint.key:
        return False
    if operator in ("", "Equal"):
        return value == (taint.value or "")
    return operator == "Exists"


def allocated_devices(claim: Any) -> Iterable[DeviceID]:
    """The devices a stored claim's allocation keeps from others: not those allocated with admin access."""
    allocation = claim.status.allocation if claim.status is not None else None
    devices = allocation.devices if allocation is not None else None
    for r in (devices.results if devices is not None else None) or []:
        if not r.adminAccess:
            yield (r.driver, r.pool, r.device)


@dataclass(slots=True)
class _Alternative:
    """A request, or one subrequest of a firstAvailable list, ready to allocate."""

    name: str  # "req" or "req/sub", as the allocation result names it
    request: str  # the request's own name, which constraints refer to
    want: Want  # class selectors then the request's; the request's tolerations
    all_devices: bool
    count: int
    tolerations: list[dict[str, Any]]  # as written (API form), copied into the allocation's results
    admin: bool  # adminAccess: devices in use by other claims may be taken too
    capacity: tuple[tuple[str, Fraction], ...] = ()  # capacity.requests (DRAConsumableCapacity)


def _capacity_requests(r: Any) -> tuple[tuple[str, Fraction], ...]:
    requests = (r.capacity.requests if r.capacity is not None else None) or {}
    out = []
    for name, value in sorted(requests.items()):
        try:
            out.append((name, parse_quantity(value)))
        except QuantityError:
            raise AllocationError(f"capacity request {name}: invalid quantity {value!r}") from None
    return tuple(out)


def _device_claim(claim: Any) -> Any:
    """The claim's `spec.devices`, or an empty one: the API server stores an omitted spec or devices as
    the zero value (no requests, no constraints), which allocates trivially."""
    spec = claim.spec
    return spec.devices if spec is not None and spec.devices is not None else _NO_DEVICES


@dataclass(frozen=True, slots=True)
class _NoDevices:
    requests: tuple[Any, ...] = ()
    constraints: tuple[Any, ...] = ()


_NO_DEVICES = _NoDevices()


def _alternatives(catalog: DeviceCatalog, claim: Any) -> list[list[_Alternative]]:
    out = []
    for req in _device_claim(claim).requests or []:
        subs = [(f"{req.name}/{s.name}", s) for s in req.firstAvailable or []] or [(req.name, req.exactly)]
        alts = []
        for name, r in subs:
            cls = catalog.classes.get(r.deviceClassName)
            if cls is None:
                raise AllocationError(f"request {name}: device class {r.deviceClassName} does not exist")
            exprs = [s.cel.expression for s in (cls.spec.selectors or []) if s.cel is not None]
            exprs += [s.cel.expression for s in (r.selectors or []) if s.cel is not None]
            tolerations = list(r.tolerations or [])
            want = (
                tuple(exprs),
                tuple((t.key or "", t.operator or "", t.value or "", t.effect or "") for t in tolerations),
            )
            alts.append(
                _Alternative(
                    name,
                    req.name,
                    want,
                    r.allocationMode == "All",
                    int(r.count or 0),
                    [t.to_dict() for t in tolerations],
                    bool(getattr(r, "adminAccess", None)),
                    _capacity_requests(r),
                )
            )
        out.append(alts)
    return out


def _attribute(device: Any, driver: str, qualified: str) -> Any:
    domain, _, ident = qualified.rpartition("/")
    attrs = device.attributes or {}
    raw = attrs.get(qualified)
    if raw is None and domain == driver:
        raw = attrs.get(ident)
    if raw is None:
        return None
    for f in ("bool", "int", "string", "version"):
        value = raw.get(f) if isinstance(raw, dict) else getattr(raw, f, None)
        if value is not None:
            return (f, value)
    return None


class _Search:
    """Backtracking over (claim, request, device) for one node, as allocator_incubating.go's allocateOne (the
    allocator v1.37 runs with its default gates: DRAConsumableCapacity and DRADeviceBindingConditions are on,
    which the stable one does not support). `allow_refused` lets devices gangsched refuses be taken, only to
    tell whether they are what the claims lack."""

    def __init__(
        self,
        catalog: DeviceCatalog,
        claims: list[Any],
        node: int,
        in_use: Container[DeviceID],
        allow_refused: bool = False,
    ) -> None:
        self.catalog = catalog
        self.claims = claims
        self.node = node
        self.in_use = in_use
        self.allow_refused = allow_refused
        self.alts = [_alternatives(catalog, c) for c in claims]
        # per claim: (distinct?, attribute, request names) for matchAttribute and distinctAttribute
        self.constraints = [
            [
                (
                    c.matchAttribute is None,
                    c.matchAttribute or c.distinctAttribute or "",
                    set(c.requests or []),
                )
                for c in (_device_claim(claim).constraints or [])
            ]
            for claim in claims
        ]
        # devices being allocated in this search, with how many claims take each (several only through
        # admin access)
        self.taken: Counter[DeviceID] = Counter()
        self.counters = CounterLedger(in_use)
        self.picked: list[list[tuple[str, str, _Slice, Any]]] = [[] for _ in claims]
        self.steps = 0
        self.devices = [
            (pool, sl, device)
            for pool, slices in catalog.on_node(node)
            for sl in slices
            for device in (sl.obj.spec.devices or [])
        ]
        self.invalid = {
            (pool.driver, pool.name): reason
            for pool, slices in catalog.on_node(node)
            if (reason := catalog.invalid_on(pool, slices)) is not None
        }

    def _fits_constraints(self, ci: int, alt: _Alternative, sl: _Slice, device: Any) -> bool:
        """matchAttribute: the devices of the named requests share the attribute's value; distinctAttribute
        (DRAConsumableCapacity): no two of them share it; a device without the attribute fits neither
        (constraint.go, allocator_incubating.go matchAttributeConstraint)."""
        for distinct, attribute, requests in self.constraints[ci]:
            if requests and alt.request not in requests and alt.name not in requests:
                continue
            mine = _attribute(device, sl.driver, attribute)
            if mine is None:
                return False
            for name, req, osl, other in self.picked[ci]:
                if requests and req not in requests and name not in requests:
                    continue
                if (_attribute(other, osl.driver, attribute) == mine) == distinct:
                    return False
        return True

    def _candidates(self, alt: _Alternative) -> list[_Candidate]:
        """Devices on the node the request can take (in use or not): for `All`, every device its selectors
        match, since one it may not take (a taint it does not tolerate, a refused field) fails the request;
        for a count, only those without such a taint or field, since the search passes over one. With
        perDeviceNodeSelection only devices serving the node; a capacity request only devices whose
        capacity holds it (both as selectors: after the CEL selectors, isSelectable then
        CmpRequestOverCapacity)."""
        catalog, node = self.catalog, self.node
        live = [
            (pool, sl, d)
            for pool, sl, d in self.devices
            if not pool.incomplete and (pool.driver, pool.name) not in self.invalid
        ]
        if alt.all_devices:
            matching = [(pool, sl, d) for pool, sl, d in live if catalog.selectors_match(alt.want[0], sl, d)]
        else:
            matching = [
                (pool, sl, d)
                for pool, sl, d in live
                if catalog.usable(alt.want, sl, d) and (self.allow_refused or refused(d) is None)
            ]
        return [
            (pool, sl, d)
            for pool, sl, d in matching
            if serves(sl, d, node) and capacity_fits(alt.capacity, d)
        ]

    def _unusable_pool(self, alt: _Alternative) -> None:
        """An `All` request needs every pool serving the node complete and valid (validateDeviceRequest)."""
        for pool, _ in self.catalog.on_node(self.node):
            if pool.incomplete:
                raise AllocationError(
                    f"request {alt.name}: asks for all devices, but resource pool "
                    f"{pool.driver}/{pool.name} is currently being updated"
                )
            if (pool.driver, pool.name) in self.invalid:
                raise AllocationError(
                    f"request {alt.name}: asks for all devices, but resource pool "
                    f"{pool.driver}/{pool.name} is currently invalid"
                )

    def solve(self, ci: int = 0, ri: int = 0) -> bool:
        if ci == len(self.claims):
            return True
        if ri == len(self.alts[ci]):
            return self.solve(ci + 1, 0)
        for alt in self.alts[ci][ri]:
            if alt.all_devices:
                self._unusable_pool(alt)
                chosen = self._candidates(alt)
                if chosen and self._take_all(ci, ri, alt, chosen):
                    return True
                continue
            if self._pick(ci, ri, alt, alt.count, self._candidates(alt), 0):
                return True
        return False

    def _busy(self, ci: int, alt: _Alternative, dev_id: DeviceID) -> bool:
        """allocateDevice's in-use test: held by any claim, or being allocated to any; with admin access
        only a device already taken for this same claim."""
        if alt.admin:
            return any(dev_id == (sl.driver, sl.pool, d.name) for _, _, sl, d in self.picked[ci])
        return dev_id in self.in_use or dev_id in self.taken

    def _take_all(self, ci: int, ri: int, alt: _Alternative, chosen: list[_Candidate]) -> bool:
        ids = [(sl.driver, sl.pool, d.name) for _, sl, d in chosen]
        if any(self._busy(ci, alt, i) for i in ids):
            return False
        if any(self.catalog.tainted_against(alt.want[1], sl, d) for _, sl, d in chosen):
            return False
        if not self.allow_refused and any(refused(d) is not None for _, _, d in chosen):
            return False
        mark = len(self.picked[ci])
        counted: list[tuple[_Pool, Consumption]] = []
        for (pool, sl, d), dev_id in zip(chosen, ids, strict=True):
            used = pool.consumers.get(dev_id, ())
            if used and not self.counters.take(pool, used):
                break
            counted.append((pool, used))
            if not self._fits_constraints(ci, alt, sl, d):
                break
            self.picked[ci].append((alt.name, alt.request, sl, d))
        else:
            self.taken.update(ids)
            if self.solve(ci, ri + 1):
                return True
            self.taken.subtract(ids)
            self.taken += Counter()  # drop the zero counts, so that `in` means taken
        for pool, used in counted:
            if used:
                self.counters.give_back(pool, used)
        del self.picked[ci][mark:]
        return False

    def _pick(
        self,
        ci: int,
        ri: int,
        alt: _Alternative,
        left: int,
        cands: list[_Candidate],
        start: int,
    ) -> bool:
        if left == 0:
            return self.solve(ci, ri + 1)
        for k in range(start, len(cands)):
            self.steps += 1
            if self.steps > MAX_STEPS:
                raise AllocationError(
                    f"node {self.catalog.snap.node_names[self.node]}: timed out trying to allocate devices"
                )
            pool, sl, d = cands[k]
            dev_id = (sl.driver, sl.pool, d.name)
            if self._busy(ci, alt, dev_id) or not self._fits_constraints(ci, alt, sl, d):
                continue
            used = pool.consumers.get(dev_id, ())
            if used and not self.counters.take(pool, used):
                continue  # its counter sets cannot cover it beside the devices allocated and being allocated
            self.taken[dev_id] += 1
            self.picked[ci].append((alt.name, alt.request, sl, d))
            if self._pick(ci, ri, alt, left - 1, cands, k + 1):
                return True
            self.picked[ci].pop()
            self.taken[dev_id] -= 1
            if not self.taken[dev_id]:
                del self.taken[dev_id]
            if used:
                self.counters.give_back(pool, used)
        return False

    def refused_fields(self) -> list[str]:
        """The refused fields of the devices picked (after a search with `allow_refused`)."""
        return [f for picked in self.picked for _, _, _, d in picked if (f := refused(d)) is not None]

    def allocations(self) -> list[Allocation]:
        node_name = self.catalog.snap.node_names[self.node]
        out = []
        for claim, alts, picked in zip(self.claims, self.alts, self.picked, strict=True):
            # per claim: two claims may name their requests alike
            tolerations = {alt.name: alt.tolerations for ri in alts for alt in ri}
            admin = {alt.name for ri in alts for alt in ri if alt.admin}
            alloc = Allocation()
            alloc.admin = frozenset(name for name, _, _, _ in picked if name in admin)
            for name, _, sl, d in picked:
                alloc.results.append((name, (sl.driver, sl.pool, d.name)))
                if tolerations.get(name):
                    alloc.tolerations[name] = tolerations[name]
            alloc.node_selector = _node_selector(claim, [(sl, d) for _, _, sl, d in picked], node_name)
            out.append(alloc)
        return out


def _node_selector(claim: Any, devices: list[tuple[_Slice, Any]], node_name: str) -> dict[str, Any] | None:
    """The allocation's node selector (allocator_incubating.go createNodeSelector): the node allocated for
    when a device is node-local (its slice's `nodeName`, with perDeviceNodeSelection its own) or binds to
    its node (`bindsToNode`); else the single terms of the node selectors merged; None when every device
    serves all nodes."""
    fields: list[dict[str, Any]] = []
    expressions: list[dict[str, Any]] = []
    for sl, d in devices:
        spec = sl.obj.spec
        node, selector = (
            (d.nodeName, d.nodeSelector) if sl.device_nodes is not None else (sl.local, spec.nodeSelector)
        )
        if node or d.bindsToNode:
            match = {"key": "metadata.name", "operator": "In", "values": [node_name]}
            return {"nodeSelectorTerms": [{"matchFields": [match]}]}
        if selector is None or not selector.nodeSelectorTerms:
            continue
        if len(selector.nodeSelectorTerms) > 1:
            raise AllocationError(
                f"create NodeSelector for claim {claim.metadata.name}: unsupported "
                f"ResourceSlice.NodeSelector with {len(selector.nodeSelectorTerms)} terms"
            )
        term = selector.nodeSelectorTerms[0]
        for req in term.matchFields or []:
            if req.to_dict() not in fields:
                fields.append(req.to_dict())
        for req in term.matchExpressions or []:
            if req.to_dict() not in expressions:
                expressions.append(req.to_dict())
    if not fields and not expressions:
        return None
    merged: dict[str, Any] = {}
    if expressions:
        merged["matchExpressions"] = expressions
    if fields:
        merged["matchFields"] = fields
    return {"nodeSelectorTerms": [merged]}


def simple_request(catalog: DeviceCatalog, claims: list[Any]) -> tuple[Want, int] | None:
    """(want, count) when the claims are one claim with one `exactly` ExactCount request and no
    constraints: then it fits on a node exactly when that many usable devices are free there."""
    if len(claims) != 1:
        return None
    devices = _device_claim(claims[0])
    if devices.constraints or len(devices.requests or []) != 1 or devices.requests[0].exactly is None:
        return None  # a firstAvailable request, even of one subrequest, is named by it: the full search
    (alts,) = _alternatives(catalog, claims[0])
    if len(alts) != 1 or alts[0].all_devices or alts[0].admin or alts[0].capacity:
        return None
    return alts[0].want, alts[0].count


def allocate_simple(catalog: DeviceCatalog, claim: Any, node: int) -> list[Allocation] | None:
    """`allocate` for a one-request claim whose matching devices are all node-local (simple_request): the
    first free devices in pool and slice order, as the search would take them."""
    simple = simple_request(catalog, [claim])
    if simple is None or catalog.use.free_per_node(simple[0]) is None:
        return allocate(catalog, [claim], node, catalog.use)
    devices = catalog.use.first_free(simple[0], node, simple[1])
    if devices is None:
        return None
    request = claim.spec.devices.requests[0]
    match = {"key": "metadata.name", "operator": "In", "values": [catalog.snap.node_names[node]]}
    selector = {"nodeSelectorTerms": [{"matchFields": [match]}]}
    tolerations = [t.to_dict() for t in request.exactly.tolerations or []]
    return [
        Allocation(
            [(request.name, d) for d in devices], selector, {request.name: tolerations} if tolerations else {}
        )
    ]


def allocate(
    catalog: DeviceCatalog, claims: list[Any], node: int, in_use: Container[DeviceID]
) -> list[Allocation] | None:
    """Allocations for every claim on `node` (in claim order), or None when the devices are not there.
    AllocationError for a claim that can never be allocated as written (missing class, CEL error)."""
    search = _Search(catalog, claims, node, in_use)
    if search.solve():
        return search.allocations()
    # Why not: devices gangsched refuses would have done (upstream allocates them), or, as upstream says
    # when a search fails, a pool serving the node is invalid.
    if catalog.refused_on(node):
        what_if = _Search(catalog, claims, node, in_use, allow_refused=True)
        if what_if.solve() and what_if.refused_fields():
            raise AllocationError(refusal_message(what_if.refused_fields()))
    if search.invalid:
        raise AllocationError("invalid resource pools were encountered")
    return None
