"""A gang preempting gangs: the cost of one workload-aware preemption cycle.

    python benchmarks/preemption.py [--quick]

The cluster (nodes of 4 CPU) is filled with as many low-priority gangs as nodes, 4 pods of 1 CPU each,
`disruptionMode: all`, every pod already bound and each gang spread over 4 nodes. Then a priority-1000 gang
of 4 x 1 CPU arrives; its first cycle fails and preemption runs: every low gang is a candidate unit, the
cycle is simulated once without them, units are reprieved, and the Decision evicts one or more gangs. The
timed section is `Scheduler.schedule_one` for that root (failed cycle + preemption), repeated on the same
filled cluster (the Decision is not applied, the preemptor is removed between runs).
Baseline, in the same run: the same cycle with the preemptor at preemptionPolicy Never, i.e. the failed
cycle alone. Each case runs twice: with CPython's cyclic GC as is (its full collections over the ~10^5
objects of the cluster land in whichever cycle allocates at the wrong moment), and with the loaded cluster
frozen out of the GC (`gc.freeze()`, what a long-running scheduler can do once its informers have synced).
Upstream's figures (test/integration/scheduler_perf: a pod preempting gangs, Go, with an API server) are
printed for reference; nothing is asserted on time.

The whole path (issue 15) is timed beside it: the preemption decision, its evictions applied to a Store whose
victims terminate for 30 s of virtual time (deletionTimestamp set, the pods still hold their nodes), the
victims deleted once that time has passed, and the preemptor's later cycle that binds it, applied. The
virtual 30 s is not waited; the figure is the CPU time of those steps. After each run the evicted gang comes
back, bound where it was, and the preemptor goes, so every run preempts on the same full cluster.
"""

from __future__ import annotations

import argparse
import gc
import time
from typing import Any

import numpy as np
from lightkube.models import core_v1, scheduling_v1beta1

from gangsched.api.defaults import apply_defaults
from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Scheduler
from gangsched.store import Store

NODE_ALLOCATABLE = {"cpu": "4", "memory": "32Gi", "pods": "110"}
GANG_SIZE = 4
LOW, HIGH = 10, 1000
UPSTREAM_MS = {100: (6.5, 48.0), 1000: (12.5, 69.0)}  # nodes -> (P50, P99)


def _node(i: int) -> Any:
    return core_v1.Node.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Node",
            "metadata": {"name": f"node-{i}"},
            "status": {"allocatable": NODE_ALLOCATABLE, "capacity": NODE_ALLOCATABLE},
        }
    )


def _group(name: str, priority: int, mode: str, policy: str = "PreemptLowerPriority") -> Any:
    return scheduling_v1beta1.PodGroup.from_dict(
        {
            "apiVersion": "scheduling.k8s.io/v1beta1",
            "kind": "PodGroup",
            "metadata": {"name": name, "namespace": "perf"},
            "spec": {
                "schedulingPolicy": {"gang": {"minCount": GANG_SIZE}},
                "disruptionMode": {mode: {}},
                "priority": priority,
                "preemptionPolicy": policy,
            },
        }
    )


def _pod(name: str, group: str, priority: int, node: str | None, policy: str = "PreemptLowerPriority") -> Any:
    spec: dict[str, Any] = {
        "schedulingGroup": {"podGroupName": group},
        "priority": priority,
        "preemptionPolicy": policy,
        "containers": [
            {"name": "c", "image": "pause", "resources": {"requests": {"cpu": "1", "memory": "1Gi"}}}
        ],
    }
    if node is not None:
        spec["nodeName"] = node
    return core_v1.Pod.from_dict(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "perf"}, "spec": spec}
    )


def filled_cluster(nodes: int) -> list[Any]:
    """`nodes` nodes and as many bound low-priority gangs, gang g's pod p on node (g + p * stride) % nodes."""
    objects: list[Any] = [_node(i) for i in range(nodes)]
    stride = max(1, nodes // GANG_SIZE)
    for g in range(nodes):
        objects.append(_group(f"low-{g}", LOW, "all"))
        objects += [
            _pod(f"low-{g}-{p}", f"low-{g}", LOW, f"node-{(g + p * stride) % nodes}")
            for p in range(GANG_SIZE)
        ]
    return objects


def _loaded(store: Store, nodes: int, freeze: bool) -> Scheduler:
    """`store` filled with the cluster and a Scheduler over it; with `freeze`, the cluster out of the GC."""
    objects = filled_cluster(nodes)
    apply_defaults(objects)
    store.add_all(objects)
    scheduler = Scheduler(store, FeatureGates(), seed=0)
    gc.collect()
    if freeze:
        gc.freeze()
    return scheduler


def time_preemptor_cycles(nodes: int, runs: int, policy: str, freeze: bool) -> tuple[list[float], list[int]]:
    """Milliseconds per preemptor cycle, and victims evicted by each, over `runs` fresh preemptors."""
    store = Store()
    scheduler = _loaded(store, nodes, freeze)
    times: list[float] = []
    victims: list[int] = []
    for run in range(runs + 1):  # run 0 warms the snapshot and the equivalence classes up
        name = f"high-{run}"
        arrivals = [_group(name, HIGH, "single", policy)]
        arrivals += [_pod(f"{name}-{p}", name, HIGH, None, policy) for p in range(GANG_SIZE)]
        apply_defaults(arrivals)
        store.add_all(arrivals)
        start = time.perf_counter()
        decision = scheduler.schedule_one(float(run))
        elapsed = time.perf_counter() - start
        assert decision is not None and not decision.bindings
        if run:
            times.append(elapsed * 1000)
            victims.append(len(decision.evictions))
        scheduler.queue.remove(("PodGroup", "perf", name))
        for p in range(GANG_SIZE):
            store.delete("Pod", ("perf", f"{name}-{p}"))
        store.delete("PodGroup", ("perf", name))
    gc.unfreeze()
    return times, victims


def time_whole_path(nodes: int, runs: int, freeze: bool) -> tuple[list[float], list[int]]:
    """Milliseconds from the preemptor's failed cycle to its bound pods applied, over `runs` preemptors."""
    now = 0.0

    def clock() -> float:
        return now

    store = Store(clock, termination_seconds=30.0)
    scheduler = _loaded(store, nodes, freeze)
    times: list[float] = []
    victims: list[int] = []
    for run in range(runs + 1):
        name = f"high-{run}"
        arrivals = [_group(name, HIGH, "single")]
        arrivals += [_pod(f"{name}-{p}", name, HIGH, None) for p in range(GANG_SIZE)]
        apply_defaults(arrivals)
        store.add_all(arrivals)
        evicted: list[Any] = []
        start = time.perf_counter()
        decision = scheduler.schedule_one(now)
        assert decision is not None and decision.evictions and not decision.bindings
        evicted = [store.get("Pod", e.pod) for e in decision.evictions]
        store.apply(decision)
        now += 30.0
        store.finish_terminations(now)
        bound = 0
        while bound < GANG_SIZE:
            later = scheduler.schedule_one(now)
            assert later is not None, "the preemptor was not retried once its victims were gone"
            bound += sum(1 for b in later.bindings if b.pod[1].startswith(f"{name}-"))
            store.apply(later)
        elapsed = time.perf_counter() - start
        if run:
            times.append(elapsed * 1000)
            victims.append(len(decision.evictions))
        for p in range(GANG_SIZE):  # the preemptor goes, its victims come back where they were
            store.delete("Pod", ("perf", f"{name}-{p}"))
        store.delete("PodGroup", ("perf", name))
        for pod in evicted:
            pod.metadata.deletionTimestamp = None
            pod.status = None
            store.add(pod)
        now += 1.0
    gc.unfreeze()
    return times, victims


def _percentiles(ms: list[float]) -> tuple[float, float]:
    return float(np.percentile(ms, 50)), float(np.percentile(ms, 99))


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.split("\n")[0])
    parser.add_argument("--quick", action="store_true", help="fewer runs")
    args = parser.parse_args()
    print(f"{'cluster':<24} {'case':<38} {'gc':<7} {'P50 ms':>8} {'P99 ms':>8} {'victims':>8}")
    for nodes, runs in ((100, 300), (1000, 100)):
        runs = max(5, runs // 10) if args.quick else runs
        label = f"{nodes} nodes / {nodes} gangs"
        for case, policy in (
            ("gang preempting (workload-aware)", "PreemptLowerPriority"),
            ("baseline: failed cycle, policy Never", "Never"),
        ):
            for freeze in (False, True):
                ms, victims = time_preemptor_cycles(nodes, runs, policy, freeze)
                p50, p99 = _percentiles(ms)
                mode = "frozen" if freeze else "default"
                print(f"{label:<24} {case:<38} {mode:<7} {p50:8.2f} {p99:8.2f} {int(np.median(victims)):8d}")
        ms, victims = time_whole_path(nodes, runs, freeze=True)
        p50, p99 = _percentiles(ms)
        whole = "whole path: decide, evict, 30 s, bind"
        print(f"{label:<24} {whole:<38} {'frozen':<7} {p50:8.2f} {p99:8.2f} {int(np.median(victims)):8d}")
        up50, up99 = UPSTREAM_MS[nodes]
        upstream = "upstream (a pod preempting gangs, Go)"
        print(f"{label:<24} {upstream:<38} {'':<7} {up50:8.2f} {up99:8.2f} {'-':>8}")


if __name__ == "__main__":
    main()
