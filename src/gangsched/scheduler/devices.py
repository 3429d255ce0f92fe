"""The devices of a cluster as the DynamicResources plugin sees them, and the structured allocator.

`DeviceCatalog` reads DeviceClasses and ResourceSlices once per store generation: slices grouped into pools
(only a pool's newest generation counts; a pool with fewer slices than `resourceSliceCount` is incomplete),
each slice with the nodes it serves (`nodeName`, a one-term `nodeSelector`, or `allNodes`), and the devices
already allocated to claims. `allocate` is the structured allocator (k8s.io/dynamic-resource-allocation,
structured/internal/stable/allocator_stable.go): claims in order, requests in order, for each request the
first `firstAvailable` alternative that works, devices tried pool by pool in slice order with backtracking,
so that `count` devices are found that match the class's and the request's CEL selectors, are not in use,
and satisfy the claim's `matchAttribute` constraints. `allocationMode: All` takes every matching device on
the node (at least one, none in use, no incomplete pool).

Pools are visited sorted by (driver, pool) where upstream iterates a Go map: any valid allocation is
upstream's, the chosen one is deterministic here.
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from dataclasses import dataclass, field
from typing import Any

import numpy as np

from ..api.cel import CelError, DeviceView, compile_selector, device_context, evaluate, maps_used
from .plugins import BoolArray
from .plugins.node_affinity import term_matches
from .snapshot import Snapshot

__all__ = ["Allocation", "AllocationError", "DeviceCatalog", "DeviceID", "allocate"]

DeviceID = tuple[str, str, str]  # driver, pool, device
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


@dataclass(slots=True)
class _Pool:
    driver: str
    name: str
    slices: list[_Slice]
    incomplete: bool


_Candidate = tuple[_Pool, _Slice, Any]  # a device with its pool and slice


@dataclass(slots=True)
class Allocation:
    """One claim's allocation: (request, driver, pool, device) results and the nodes it binds to."""

    results: list[tuple[str, DeviceID]] = field(default_factory=list)
    node_selector: dict[str, Any] | None = None

    def to_status(self) -> dict[str, Any]:
        """As ResourceClaim.status.allocation (AllocationResult) in API form."""
        out: dict[str, Any] = {
            "devices": {
                "results": [
                    {"request": req, "driver": d, "pool": p, "device": dev}
                    for req, (d, p, dev) in self.results
                ]
            }
        }
        if self.node_selector is not None:
            out["nodeSelector"] = self.node_selector
        return out


class DeviceCatalog:
    """DeviceClasses, pools and devices for one snapshot of nodes. Never changed after building, except
    `allocated`, the devices held by claims in the store."""

    def __init__(self, store: Any, snap: Snapshot) -> None:
        self.snap = snap
        self.classes: dict[str, Any] = {c.metadata.name: c for c in store.list("DeviceClass")}
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
            pool.slices.append(_Slice(s, key[0], key[1], self._nodes_of(s), s.spec.nodeName or None))
        for pool in pools.values():
            count = pool.slices[0].obj.spec.pool.resourceSliceCount
            pool.incomplete = len(pool.slices) < count
            pool.slices.sort(key=lambda sl: sl.obj.metadata.name)
        self.pools = [pools[k] for k in sorted(pools)]
        self.use = DeviceUse(self)
        self.held: dict[tuple[str, str], tuple[DeviceID, ...]] = {}  # claim -> devices counted for it
        for claim in store.list("ResourceClaim"):
            self.claim_changed((claim.metadata.namespace or "", claim.metadata.name), claim)
        self._views: dict[DeviceID, DeviceView] = {}
        self._contexts: dict[tuple[DeviceID, frozenset[tuple[str, str]], frozenset[str]], Any] = {}
        self._matches: dict[tuple[DeviceID, tuple[str, ...]], bool] = {}
        self._on_node: dict[int, list[tuple[_Pool, list[_Slice]]]] = {}

    def claim_changed(self, key: tuple[str, str], claim: Any | None) -> None:
        """The devices a stored claim holds (none once deleted or deallocated) are in use."""
        self.use.remove(self.held.pop(key, ()))
        devices = tuple(allocated_devices(claim)) if claim is not None else ()
        if devices:
            self.held[key] = devices
            self.use.add(devices)

    def node_local_matches(self, expressions: tuple[str, ...]) -> dict[DeviceID, int] | None:
        """Devices matching `expressions` with the one node each is on, when every matching device is in a
        complete node-local pool; None otherwise (the allocator must look node by node)."""
        out: dict[DeviceID, int] = {}
        for pool in self.pools:
            for sl in pool.slices:
                for device in sl.obj.spec.devices or []:
                    if not self.selectors_match(expressions, sl, device):
                        continue
                    if pool.incomplete or sl.local is None:
                        return None
                    node = self.snap.index.get(sl.local)
                    if node is not None:
                        out[(sl.driver, sl.pool, device.name)] = node
        return out

    def _nodes_of(self, s: Any) -> BoolArray:
        n = len(self.snap)
        spec = s.spec
        if spec.nodeName:
            mask = np.zeros(n, dtype=bool)
            if spec.nodeName in self.snap.index:
                mask[self.snap.index[spec.nodeName]] = True
            return mask
        if spec.allNodes:
            return np.ones(n, dtype=bool)
        if spec.nodeSelector is not None:
            mask = np.zeros(n, dtype=bool)
            for term in spec.nodeSelector.nodeSelectorTerms or []:
                mask |= term_matches(self.snap, term)
            return mask
        return np.zeros(n, dtype=bool)  # perDeviceNodeSelection: not read (see docs)

    def on_node(self, node: int) -> list[tuple[_Pool, list[_Slice]]]:
        """Pools with at least one slice serving `node`, with those slices (GatherPools)."""
        if not self._on_node:  # one pass over the slices for every node, in pool then slice order
            by_node: dict[int, dict[int, list[_Slice]]] = {}
            for p, pool in enumerate(self.pools):
                for sl in pool.slices:
                    for n in np.flatnonzero(sl.nodes):
                        by_node.setdefault(int(n), {}).setdefault(p, []).append(sl)
            self._on_node = {
                n: [(self.pools[p], sls) for p, sls in pools.items()] for n, pools in by_node.items()
            }
            self._on_node.setdefault(-1, [])
        return self._on_node.get(node, [])

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
    cycles; a device is in use while anyone holds it. For the selectors asked about, it keeps the number of
    free matching devices per node in step, so that a one-request claim is checked on every node at once."""

    def __init__(self, catalog: DeviceCatalog) -> None:
        self.catalog = catalog
        self.count: dict[DeviceID, int] = {}
        self._free: dict[tuple[str, ...], Any] = {}  # selectors -> free matching devices per node
        self._followers: dict[DeviceID, list[tuple[tuple[str, ...], int]]] = {}  # device -> (selectors, node)
        self._matching: dict[tuple[str, ...], dict[int, list[DeviceID]]] = {}  # selectors -> node -> devices

    def __contains__(self, device: object) -> bool:
        return device in self.count

    def _shift(self, device: DeviceID, sign: int) -> None:
        for expressions, node in self._followers.get(device, ()):
            self._free[expressions][node] += sign

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

    def free_per_node(self, expressions: tuple[str, ...]) -> Any | None:
        """Free devices matching `expressions`, per node (numpy int64), or None when some matching device
        is not node-local (see DeviceCatalog.node_local_matches)."""
        free = self._free.get(expressions)
        if free is None and expressions not in self._free:
            matches = self.catalog.node_local_matches(expressions)
            if matches is None:
                self._free[expressions] = None
                return None
            free = np.zeros(len(self.catalog.snap), dtype=np.int64)
            per_node: dict[int, list[DeviceID]] = {}
            self._matching[expressions] = per_node
            for device, node in matches.items():
                per_node.setdefault(node, []).append(device)
                self._followers.setdefault(device, []).append((expressions, node))
                if device not in self.count:
                    free[node] += 1
            self._free[expressions] = free
        return free

    def first_free(self, expressions: tuple[str, ...], node: int, count: int) -> list[DeviceID] | None:
        """The first `count` free devices matching `expressions` on `node`, in the allocator's order (after
        free_per_node said they are there)."""
        out = [d for d in self._matching.get(expressions, {}).get(node, []) if d not in self.count][:count]
        return out if len(out) == count else None


def allocated_devices(claim: Any) -> Iterable[DeviceID]:
    allocation = claim.status.allocation if claim.status is not None else None
    devices = allocation.devices if allocation is not None else None
    for r in (devices.results if devices is not None else None) or []:
        yield (r.driver, r.pool, r.device)


@dataclass(slots=True)
class _Alternative:
    """A request, or one subrequest of a firstAvailable list, ready to allocate."""

    name: str  # "req" or "req/sub", as the allocation result names it
    request: str  # the request's own name, which constraints refer to
    selectors: tuple[str, ...]  # class selectors then the request's
    all_devices: bool
    count: int


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
            alts.append(
                _Alternative(name, req.name, tuple(exprs), r.allocationMode == "All", int(r.count or 0))
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
    """Backtracking over (claim, request, device) for one node, as allocator_stable.go's allocateOne."""

    def __init__(
        self, catalog: DeviceCatalog, claims: list[Any], node: int, in_use: Container[DeviceID]
    ) -> None:
        self.catalog = catalog
        self.claims = claims
        self.node = node
        self.in_use = in_use
        self.alts = [_alternatives(catalog, c) for c in claims]
        self.constraints = [
            [(c.matchAttribute, set(c.requests or [])) for c in (_device_claim(claim).constraints or [])]
            for claim in claims
        ]
        self.taken: set[DeviceID] = set()
        self.picked: list[list[tuple[str, str, _Slice, Any]]] = [[] for _ in claims]
        self.steps = 0
        self.devices = [
            (pool, sl, device)
            for pool, slices in catalog.on_node(node)
            for sl in slices
            for device in (sl.obj.spec.devices or [])
        ]

    def _fits_constraints(self, ci: int, alt: _Alternative, sl: _Slice, device: Any) -> bool:
        for attribute, requests in self.constraints[ci]:
            if requests and alt.request not in requests and alt.name not in requests:
                continue
            mine = _attribute(device, sl.driver, attribute)
            if mine is None:
                return False
            for _, req, osl, other in self.picked[ci]:
                if requests and req not in requests:
                    continue
                if _attribute(other, osl.driver, attribute) != mine:
                    return False
        return True

    def _candidates(self, alt: _Alternative) -> list[_Candidate]:
        return [
            (pool, sl, d)
            for pool, sl, d in self.devices
            if not pool.incomplete and self.catalog.selectors_match(alt.selectors, sl, d)
        ]

    def solve(self, ci: int = 0, ri: int = 0) -> bool:
        if ci == len(self.claims):
            return True
        if ri == len(self.alts[ci]):
            return self.solve(ci + 1, 0)
        for alt in self.alts[ci][ri]:
            if alt.all_devices:
                if any(pool.incomplete for pool, _ in self.catalog.on_node(self.node)):
                    pool = next(p for p, _ in self.catalog.on_node(self.node) if p.incomplete)
                    raise AllocationError(
                        f"request {alt.name}: asks for all devices, but resource pool "
                        f"{pool.driver}/{pool.name} is currently being updated"
                    )
                chosen = self._candidates(alt)
                if chosen and self._take_all(ci, ri, alt, chosen):
                    return True
                continue
            if self._pick(ci, ri, alt, alt.count, self._candidates(alt), 0):
                return True
        return False

    def _take_all(self, ci: int, ri: int, alt: _Alternative, chosen: list[_Candidate]) -> bool:
        ids = [(sl.driver, sl.pool, d.name) for _, sl, d in chosen]
        if any(i in self.in_use or i in self.taken for i in ids):
            return False
        mark = len(self.picked[ci])
        for (_, sl, d), i in zip(chosen, ids, strict=True):
            if not self._fits_constraints(ci, alt, sl, d):
                del self.picked[ci][mark:]
                self.taken.difference_update(ids)
                return False
            self.picked[ci].append((alt.name, alt.request, sl, d))
            self.taken.add(i)
        if self.solve(ci, ri + 1):
            return True
        del self.picked[ci][mark:]
        self.taken.difference_update(ids)
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
            _, sl, d = cands[k]
            dev_id = (sl.driver, sl.pool, d.name)
            if dev_id in self.in_use or dev_id in self.taken or not self._fits_constraints(ci, alt, sl, d):
                continue
            self.taken.add(dev_id)
            self.picked[ci].append((alt.name, alt.request, sl, d))
            if self._pick(ci, ri, alt, left - 1, cands, k + 1):
                return True
            self.picked[ci].pop()
            self.taken.discard(dev_id)
        return False

    def allocations(self) -> list[Allocation]:
        out = []
        for picked in self.picked:
            alloc = Allocation()
            selector_fields: list[dict[str, Any]] = []
            selector_exprs: list[dict[str, Any]] = []
            local = None
            for name, _, sl, d in picked:
                alloc.results.append((name, (sl.driver, sl.pool, d.name)))
                if sl.local is not None:
                    local = local or sl.local
                elif sl.obj.spec.nodeSelector is not None:
                    term = sl.obj.spec.nodeSelector.nodeSelectorTerms[0]
                    for req in term.matchFields or []:
                        if req.to_dict() not in selector_fields:
                            selector_fields.append(req.to_dict())
                    for req in term.matchExpressions or []:
                        if req.to_dict() not in selector_exprs:
                            selector_exprs.append(req.to_dict())
            if local is not None:
                match = {"key": "metadata.name", "operator": "In", "values": [local]}
                alloc.node_selector = {"nodeSelectorTerms": [{"matchFields": [match]}]}
            elif selector_fields or selector_exprs:
                merged: dict[str, Any] = {}
                if selector_exprs:
                    merged["matchExpressions"] = selector_exprs
                if selector_fields:
                    merged["matchFields"] = selector_fields
                alloc.node_selector = {"nodeSelectorTerms": [merged]}
            out.append(alloc)
        return out


def simple_request(catalog: DeviceCatalog, claims: list[Any]) -> tuple[tuple[str, ...], int] | None:
    """(selectors, count) when the claims are one claim with one `exactly` ExactCount request and no
    constraints: then it fits on a node exactly when that many matching devices are free there."""
    if len(claims) != 1:
        return None
    devices = _device_claim(claims[0])
    if devices.constraints or len(devices.requests or []) != 1:
        return None
    (alts,) = _alternatives(catalog, claims[0])
    if len(alts) != 1 or alts[0].all_devices:
        return None
    return alts[0].selectors, alts[0].count


def allocate_simple(catalog: DeviceCatalog, claim: Any, node: int) -> list[Allocation] | None:
    """`allocate` for a one-request claim whose matching devices are all node-local (simple_request): the
    first free devices in pool and slice order, as the search would take them."""
    simple = simple_request(catalog, [claim])
    if simple is None or catalog.use.free_per_node(simple[0]) is None:
        return allocate(catalog, [claim], node, catalog.use)
    devices = catalog.use.first_free(simple[0], node, simple[1])
    if devices is None:
        return None
    request = claim.spec.devices.requests[0].name
    match = {"key": "metadata.name", "operator": "In", "values": [catalog.snap.node_names[node]]}
    selector = {"nodeSelectorTerms": [{"matchFields": [match]}]}
    return [Allocation([(request, d) for d in devices], selector)]


def allocate(
    catalog: DeviceCatalog, claims: list[Any], node: int, in_use: Container[DeviceID]
) -> list[Allocation] | None:
    """Allocations for every claim on `node` (in claim order), or None when the devices are not there.
    AllocationError for a claim that can never be allocated as written (missing class, CEL error)."""
    search = _Search(catalog, claims, node, in_use)
    return search.allocations() if search.solve() else None
