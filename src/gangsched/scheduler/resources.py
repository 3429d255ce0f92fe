"""Pod resource requests as upstream computes them (k8s.io/component-helpers/resource.PodRequests).

Effective request = max(sum of containers + sidecars, max over init containers of (init + sidecars started
before it)) + pod overhead. Values are integer milli-units. Scoring uses the "non-zero" request for cpu and
memory (100m / 200Mi when a container asks for nothing), as upstream's NodeResourcesFit scorer does.
"""

from __future__ import annotations

from typing import Any

from ..api.quantity import milli

__all__ = ["DEFAULT_MEMORY_MILLI", "DEFAULT_MILLI_CPU", "nonzero_requests", "pod_requests"]

DEFAULT_MILLI_CPU = 100
DEFAULT_MEMORY_MILLI = 200 * 1024 * 1024 * 1000


def _container_requests(container: Any) -> dict[str, int]:
    res = container.resources
    if res is None:
        return {}
    # A limit without a request defaults the request (API-server defaulting).
    out = {k: milli(v) for k, v in (res.limits or {}).items()}
    out.update({k: milli(v) for k, v in (res.requests or {}).items()})
    return out


def _add(into: dict[str, int], more: dict[str, int]) -> None:
    for k, v in more.items():
        into[k] = into.get(k, 0) + v


def _max(into: dict[str, int], more: dict[str, int]) -> None:
    for k, v in more.items():
        if v > into.get(k, 0):
            into[k] = v


def pod_requests(spec: Any) -> dict[str, int]:
    """Effective requests of a pod spec in milli-units per resource name."""
    total: dict[str, int] = {}
    for c in spec.containers or []:
        _add(total, _container_requests(c))
    sidecars: dict[str, int] = {}
    init_max: dict[str, int] = {}
    for c in spec.initContainers or []:
        req = _container_requests(c)
        if c.restartPolicy == "Always":
            _add(sidecars, req)
            _add(total, req)
            _max(init_max, sidecars)
        else:
            step = dict(sidecars)
            _add(step, req)
            _max(init_max, step)
    _max(total, init_max)
    _add(total, {k: milli(v) for k, v in (spec.overhead or {}).items()})
    return total


def nonzero_requests(spec: Any) -> tuple[int, int]:
    """(cpu, memory) milli-requests for scoring, with upstream's defaults for containers that ask nothing."""
    cpu = mem = 0
    for c in spec.containers or []:
        req = _container_requests(c)
        cpu += req.get("cpu", 0) or DEFAULT_MILLI_CPU
        mem += req.get("memory", 0) or DEFAULT_MEMORY_MILLI
    for c in spec.initContainers or []:
        req = _container_requests(c)
        cpu = max(cpu, req.get("cpu", 0) or DEFAULT_MILLI_CPU)
        mem = max(mem, req.get("memory", 0) or DEFAULT_MEMORY_MILLI)
    overhead = {k: milli(v) for k, v in (spec.overhead or {}).items()}
    return cpu + overhead.get("cpu", 0), mem + overhead.get("memory", 0)
