"""The snapshot's change logs are dropped when they grow long (Snapshot.clear_logs, called by the evaluator
past _MAX_CHANGE_LOG entries); every cache that follows them (an equivalence class's fit and score, the
pods-stage counters) must then start over, or it would miss the pods placed after the reset. With the limit at
0 the logs are dropped before every pod, and the decisions must still be upstream's: at most one `web` pod per
node (required pod anti-affinity on the hostname) and no node over its CPU."""

from __future__ import annotations

from collections import Counter
from typing import Any

import pytest

from gangsched.scheduler import evaluator, run_until_stable

from .builders import build, node


def pod(name: str, labels: dict[str, str], affinity: dict[str, Any] | None = None) -> dict[str, Any]:
    container = {"name": "c", "image": "x", "resources": {"requests": {"cpu": "1"}}}
    spec: dict[str, Any] = {"containers": [container]}
    if affinity is not None:
        spec["affinity"] = affinity
    return {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "labels": labels}, "spec": spec}


def web(i: int) -> dict[str, Any]:
    anti = {"labelSelector": {"matchLabels": {"app": "web"}}, "topologyKey": "kubernetes.io/hostname"}
    return pod(
        f"web-{i}",
        {"app": "web"},
        {"podAntiAffinity": {"requiredDuringSchedulingIgnoredDuringExecution": [anti]}},
    )


def fill(i: int) -> dict[str, Any]:
    return pod(f"fill-{i}", {})


@pytest.mark.parametrize("limit", [0, 200_000], ids=["logs-dropped-before-every-pod", "logs-kept"])
def test_decisions_do_not_depend_on_when_the_change_logs_are_dropped(
    limit: int, monkeypatch: pytest.MonkeyPatch
) -> None:
    monkeypatch.setattr(evaluator, "_MAX_CHANGE_LOG", limit)
    docs = [node(f"n{i}", "3") for i in range(3)] + [web(i) for i in range(4)] + [fill(i) for i in range(7)]
    store, scheduler = build(docs)
    run_until_stable(store, scheduler)
    where = {p.metadata.name: p.spec.nodeName for p in store.list("Pod")}
    webs = [where[f"web-{i}"] for i in range(4)]
    # the web pods come first in the queue: three take a node each, the fourth finds every node holding one
    assert sorted(n for n in webs if n) == ["n0", "n1", "n2"] and webs[3] is None
    # then six of the seven 1-CPU pods fill the 2 CPUs left on each node
    assert Counter(n for n in where.values() if n) == {"n0": 3, "n1": 3, "n2": 3}
    assert sum(1 for i in range(7) if where[f"fill-{i}"] is None) == 1
