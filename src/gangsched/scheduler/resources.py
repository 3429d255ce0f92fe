"""Pod resource requests as upstream computes them (k8s.io/component-helpers/resource.PodRequests).

Effective request = max(sum of containers + sidecars, max over init containers of (init + sidecars started
before it)), then pod-level requests (spec.resources, gate PodLevelResources, on since v1.34) replace the
aggregate for cpu, memory and hugepages, then + pod overhead. Values are integer milli-units. Scoring uses
the "non-zero" request for cpu and memory: upstream runs the same formula with 100m / 200Mi filled in for
every container (init and sidecar too) that omits the request - omits, not sets it to 0.
"""

from __future__ import annotations

from typing import Any

from ..api.quantity import milli

__all__ = [
    "DEFAULT_MEMORY_MILLI",
    "DEFAULT_MILLI_CPU",
    "container_requests",
    "nonzero_requests",
    "pod_requests",
]

DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY_MILLI = 200 * 1024 * 1024 * 1000


def _container_requests(container: Any, non_missing: dict[str, int]) -> dict[str, int]:
    res = container.resources
    out: dict[str, int] = {}
    if res is not None:
        # A limit without a request defaults the request (API-server defaulting).
        out = {k: milli(v) for k, v in (res.limits or {}).items()}
        out.update({k: milli(v) for k, v in (res.requests or {}).items()})
    for k, v in non_missing.items():
        out.setdefault(k, v)
    return out


def container_requests(container: Any) -> dict[str, int]:
    """One container's requests in milli-units, limits standing in for missing requests (as defaulted)."""
    return _container_requests(container, {})


def _pod_level_supported(resource: str) -> bool:
    return resource in ("cpu", "memory") or resource.startswith("hugepages-")


def _add(into: dict[str, int], more: dict[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], more: dict[str, int]) -> None:
    for k, v in more.items():
        if v > into.get(k, 0):
            into[k] = v


def pod_requests(spec: Any, non_missing: dict[str, int] | None = None) -> dict[str, int]:
    """Effective requests of a pod spec in milli-units per resource name; `non_missing` fills in requests a
    container omits (upstream's NonMissingContainerRequests)."""
    fill = non_missing or {}
    total: dict[str, int] = {}
    for c in spec.containers or []:
        _add(total, _container_requests(c, fill))
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in spec.initContainers or []:
        req = _container_requests(c, fill)
        if c.restartPolicy == "Always":
            _add(sidecars, req)
            _add(total, req)
            _max(init_max, sidecars)
        else:
            step = dict(sidecars)
            _add(step, req)
            _max(init_max, step)
    _max(total, init_max)
    pod_level = (spec.resources.requests if spec.resources else None) or {}
    total.update({k: milli(v) for k, v in pod_level.items() if _pod_level_supported(k)})
    _add(total, {k: milli(v) for k, v in (spec.overhead or {}).items()})
    return total


def nonzero_requests(spec: Any) -> tuple[int, int]:
    """(cpu, memory) milli-requests for scoring, with upstream's defaults for requests a container omits."""
    req = pod_requests(spec, {"cpu": DEFAULT_MILLI_CPU, "memory": DEFAULT_MEMORY_MILLI})
    return req.get("cpu", 0), req.get("memory", 0)
