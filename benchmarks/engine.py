"""Engine throughput on upstream's scheduler_perf shapes, with no API server.

    python benchmarks/engine.py [--quick] [--shape NAME ...] [--repeat N]

Each shape runs in fresh subprocesses (so peak RSS is its own), --repeat times; the median run is shown.
Nodes are created and the scheduler synced before the clock starts, as scheduler_perf does; the clock runs
from the first pod added to the store to the last pod bound. Figures: pods bound per second, CPU seconds of
the measured phase and pods bound per CPU second (less sensitive to a busy machine than wall time), peak
RSS, and
in the same command a baseline: the same workload scheduled pod by pod (GenericWorkload=false), or for the
topology shapes upstream's adaptive placement limit. Upstream kube-scheduler v1.37 reaches ~560-980 pods/s
on such shapes with an API server (scheduler_perf); its figures are printed for reference, not compared.
"""

from __future__ import annotations

import argparse
import gc
import json
import multiprocessing as mp
import resource
import sys
import time
from collections.abc import Callable
from typing import Any

from dra_shape import dra_shape  # benchmarks/ is on sys.path when this file runs
from lightkube.models import core_v1, scheduling_v1beta1

from gangsched.api.defaults import apply_defaults
from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Profile, Scheduler, run_until_stable
from gangsched.store import Store
from gangsched.store.claim_controller import sync_claims

NODE_ALLOCATABLE = {"cpu": "4", "memory": "32Gi", "pods": "110"}  # scheduler_perf's node-default template
POD_REQUESTS = {"cpu": "100m", "memory": "100Mi"}


def nodes(count: int, labels: Callable[[int], dict[str, str]] | None = None) -> list[Any]:
    return [
        core_v1.Node.from_dict(
            {
                "apiVersion": "v1",
                "kind": "Node",
                "metadata": {"name": f"node-{i}", "labels": labels(i) if labels else {}},
                "status": {"allocatable": NODE_ALLOCATABLE, "capacity": NODE_ALLOCATABLE},
            }
        )
        for i in range(count)
    ]


def gang_workload(gangs: int, size: int, topology_key: str | None = None) -> list[Any]:
    objects: list[Any] = []
    for g in range(gangs):
        spec: dict[str, Any] = {"schedulingPolicy": {"gang": {"minCount": size}}}
        if topology_key:
            spec["schedulingConstraints"] = {"topology": [{"key": topology_key}]}
        objects.append(
            scheduling_v1beta1.PodGroup.from_dict(
                {
                    "apiVersion": "scheduling.k8s.io/v1beta1",
                    "kind": "PodGroup",
                    "metadata": {"name": f"gang-{g}", "namespace": "perf"},
                    "spec": spec,
                }
            )
        )
        objects += [pod(f"gang-{g}-{p}", f"gang-{g}") for p in range(size)]
    return objects


def pod(name: str, group: str | None) -> Any:
    spec: dict[str, Any] = {
        "containers": [{"name": "c", "image": "pause", "resources": {"requests": POD_REQUESTS}}]
    }
    if group:
        spec["schedulingGroup"] = {"podGroupName": group}
    return core_v1.Pod.from_dict(
        {"apiVersion": "v1", "kind": "Pod", "metadata": {"name": name, "namespace": "perf"}, "spec": spec}
    )


RACK = "topology.kubernetes.io/rack"
ZONE = "topology.kubernetes.io/zone"


def plugin_pod(name: str, namespace: str, template: str) -> Any:
    """scheduler_perf's templates pod-with-pod-anti-affinity.yaml, pod-with-pod-affinity.yaml,
    pod-with-topology-spreading.yaml and pod-default.yaml (test/integration/scheduler_perf/templates)."""
    requests = {"cpu": "100m", "memory": "500Mi"}
    spec: dict[str, Any] = {
        "containers": [
            {
                "name": "pause",
                "image": "registry.k8s.io/pause:3.10.2",
                "ports": [{"containerPort": 80}],
                "resources": {"requests": requests, "limits": requests},
            }
        ]
    }
    labels: dict[str, str] = {}
    if template in ("anti-affinity", "affinity"):
        color, key = ("green", "kubernetes.io/hostname") if template == "anti-affinity" else ("blue", ZONE)
        labels = {"color": color}
        term = {
            "labelSelector": {"matchLabels": labels},
            "topologyKey": key,
            "namespaces": ["sched-1", "sched-0"],
        }
        kind = "podAntiAffinity" if template == "anti-affinity" else "podAffinity"
        spec["affinity"] = {kind: {"requiredDuringSchedulingIgnoredDuringExecution": [term]}}
    elif template == "spreading":
        labels = {"color": "blue"}
        spec["topologySpreadConstraints"] = [
            {
                "maxSkew": 5,
                "topologyKey": ZONE,
                "whenUnsatisfiable": "DoNotSchedule",
                "labelSelector": {"matchLabels": labels},
            }
        ]
    return core_v1.Pod.from_dict(
        {
            "apiVersion": "v1",
            "kind": "Pod",
            "metadata": {"name": name, "namespace": namespace, "labels": labels},
            "spec": spec,
        }
    )


def plugin_shape(
    zones: list[str] | None, init: tuple[int, str, str], measured: tuple[int, str, str]
) -> tuple[list[Any], list[Any], list[Any]]:
    """scheduler_perf's affinity and topology_spreading workloads: 5,000 nodes (labelled round-robin with
    `zones` when given), `init` pods scheduled before the clock starts, `measured` pods timed."""
    cluster = nodes(5000, (lambda i: {ZONE: zones[i % len(zones)]}) if zones else None)
    before = [plugin_pod(f"init-{i}", init[1], init[2]) for i in range(init[0])]
    timed = [plugin_pod(f"pod-{i}", measured[1], measured[2]) for i in range(measured[0])]
    return cluster, before, timed


# Upstream's scheduler_perf thresholds (pods/s) for the plugin shapes: the baseline they are compared with.
THRESHOLDS = {"anti-affinity-2000": 180, "affinity-5000": 70, "spreading-5000": 460, "dra-template-500": 56}


def rack_labels(i: int) -> dict[str, str]:
    return {
        "topology.kubernetes.io/zone": f"zone-{i // 100}",
        "topology.kubernetes.io/rack": f"rack-{i % 50}",
    }


Shape = Callable[[], tuple[list[Any], list[Any]] | tuple[list[Any], list[Any], list[Any]]]
SHAPES: dict[str, Shape] = {
    "gangs-1000x3": lambda: (nodes(5000), gang_workload(1000, 3)),
    "gangs-3000x3": lambda: (nodes(5000), gang_workload(3000, 3)),
    "gangs-3x1000": lambda: (nodes(5000), gang_workload(3, 1000)),
    "gangs-9x1000": lambda: (nodes(5000), gang_workload(9, 1000)),
    "single-5000": lambda: (nodes(5000), [pod(f"p-{i}", None) for i in range(5000)]),
    "tas-750x4": lambda: (nodes(5000, rack_labels), gang_workload(750, 4, RACK)),
    "tas-2250x4": lambda: (nodes(5000, rack_labels), gang_workload(2250, 4, RACK)),
    "tas-9x1000": lambda: (nodes(5000, rack_labels), gang_workload(9, 1000, RACK)),
    # affinity/performance-config.yaml SchedulingPodAntiAffinity 5000Nodes_2000Pods
    "anti-affinity-2000": lambda: plugin_shape(
        None, (1000, "sched-0", "anti-affinity"), (2000, "sched-1", "anti-affinity")
    ),
    # affinity/performance-config.yaml SchedulingPodAffinity 5000Nodes_5000Pods (every node in zone1)
    "affinity-5000": lambda: plugin_shape(
        ["zone1"], (5000, "sched-0", "affinity"), (5000, "sched-1", "affinity")
    ),
    # topology_spreading/performance-config.yaml TopologySpreading 5000Nodes_5000Pods
    "spreading-5000": lambda: plugin_shape(
        ["moon-1", "moon-2", "moon-3"], (5000, "default", "default"), (5000, "default", "spreading")
    ),
    # dra/performance-config.yaml SchedulingWithResourceClaimTemplate 5000pods_500nodes (dra_shape.py)
    "dra-template-500": lambda: dra_shape(500, 2500, 2500),
}
QUICK: dict[str, Shape] = {
    "gangs-1000x3": lambda: (nodes(500), gang_workload(100, 3)),
    "gangs-3x1000": lambda: (nodes(500), gang_workload(3, 100)),
    "single-5000": lambda: (nodes(500), [pod(f"p-{i}", None) for i in range(500)]),
    "tas-750x4": lambda: (nodes(500, rack_labels), gang_workload(75, 4, RACK)),
    "anti-affinity-2000": lambda: plugin_shape(
        None, (100, "sched-0", "anti-affinity"), (200, "sched-1", "anti-affinity")
    ),
    "dra-template-500": lambda: dra_shape(50, 250, 250),
}


def run_shape(name: str, quick: bool, variant: str, extra: dict[str, Any], out: Any) -> None:
    """In a subprocess: build, schedule, report (bound pods, seconds, peak RSS MiB).

    As scheduler_perf does, nodes exist before the measured phase; the clock runs from the first pod
    created to the last pod bound."""
    built = (QUICK if quick else SHAPES | extra)[name]()
    cluster, workload = built[0], built[-1]
    before = built[1] if len(built) == 3 else []
    apply_defaults(cluster + before + workload)
    gates = FeatureGates.parse("GenericWorkload=false" if variant == "pod-by-pod" else "")
    store = Store()
    store.add_all(cluster)
    scheduler = Scheduler(store, gates, seed=0, profile=Profile(placement_limit=variant == "placement-limit"))
    scheduler.sync()
    if before:  # scheduler_perf's initPods: scheduled before the measured phase
        store.add_all(before)
        run_until_stable(store, scheduler)
    gc.freeze()  # as gangsched schedule does once its objects are loaded
    start, cpu_start = time.perf_counter(), time.process_time()
    store.add_all(workload)
    # The resourceclaim controller's work (claims from templates) is part of the measured phase, as it is
    # in scheduler_perf where the controller runs beside the scheduler.
    sync_claims(store, workload_claims=gates.enabled("DRAWorkloadResourceClaims"))
    run_until_stable(store, scheduler)
    seconds = time.perf_counter() - start
    cpu_seconds = time.process_time() - cpu_start
    bound = sum(1 for p in store.list("Pod") if p.spec.nodeName) - sum(1 for p in before if p.spec.nodeName)
    peak_mib = resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024
    out.send(
        {
            "bound": bound,
            "pods": sum(1 for o in workload if o.kind == "Pod"),
            "seconds": seconds,
            "cpu_seconds": cpu_seconds,
            "peak_mib": peak_mib,
        }
    )


def measure(name: str, quick: bool, variant: str, extra: dict[str, Any] | None = None) -> dict[str, Any]:
    ctx = mp.get_context("fork")
    recv, send = ctx.Pipe(duplex=False)
    proc = ctx.Process(target=run_shape, args=(name, quick, variant, extra or {}, send))
    proc.start()
    result: dict[str, Any] = recv.recv()
    proc.join()
    return result


def median_run(
    name: str, quick: bool, variant: str, extra: dict[str, Any] | None, repeat: int
) -> dict[str, Any]:
    """The run with the median time among `repeat` runs in fresh processes (a shared machine is noisy)."""
    runs = sorted(
        (measure(name, quick, variant, extra) for _ in range(max(1, repeat))), key=lambda r: r["seconds"]
    )
    return runs[len(runs) // 2]


def main(argv: list[str] | None = None, extra: dict[str, Any] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--quick", action="store_true", help="small shapes (a smoke run)")
    parser.add_argument("--shape", action="append", help="run only these shapes")
    parser.add_argument("--json", action="store_true", help="print one JSON object per shape")
    parser.add_argument(
        "--repeat", type=int, default=3, help="runs per shape and variant; the median run is reported"
    )
    args = parser.parse_args(argv)
    table = QUICK if args.quick else SHAPES | (extra or {})
    names = args.shape or list(table)
    print(
        "baseline, in the same command: pod-by-pod (GenericWorkload=false) for plain shapes; for tas-* "
        "shapes upstream's adaptive placement limit (the main figure scores ALL placements); for the "
        "affinity and spreading shapes upstream's scheduler_perf threshold"
    )
    print(
        f"{'shape':<18} {'pods':>6} {'bound':>6} {'seconds':>8} {'cpu s':>6} {'pods/s':>9} "
        f"{'cpu pods/s':>10} {'peak MiB':>9} {'baseline':>18} {'base pods/s':>12} {'ratio':>6} "
        f"{'cpu ratio':>9}"
    )
    for name in names:
        variant = "placement-limit" if name.startswith("tas-") else "pod-by-pod"
        main_run = median_run(name, args.quick, "gang", extra, args.repeat)
        rate = main_run["bound"] / main_run["seconds"] if main_run["seconds"] else float("inf")
        cpu_rate = main_run["bound"] / main_run["cpu_seconds"] if main_run["cpu_seconds"] else float("inf")
        if name in THRESHOLDS:  # lone pods: pod by pod is the same run; compare with upstream's threshold
            variant, base = "upstream threshold", {"threshold": THRESHOLDS[name]}
            base_rate = base_cpu_rate = float(THRESHOLDS[name])
        else:
            base = median_run(name, args.quick, variant, extra, args.repeat)
            base_rate = base["bound"] / base["seconds"] if base["seconds"] else float("inf")
            base_cpu_rate = base["bound"] / base["cpu_seconds"] if base["cpu_seconds"] else float("inf")
        if args.json:
            print(json.dumps({"shape": name, "gang": main_run, variant: base}))
        print(
            f"{name:<18} {main_run['pods']:>6} {main_run['bound']:>6} {main_run['seconds']:>8.2f} "
            f"{main_run['cpu_seconds']:>6.2f} "
            f"{rate:>9.0f} {cpu_rate:>10.0f} {main_run['peak_mib']:>9.0f} {variant:>18} {base_rate:>12.0f} "
            f"{rate / base_rate:>6.2f} {cpu_rate / base_cpu_rate:>9.2f}"
        )
        sys.stdout.flush()
    print("reference: kube-scheduler v1.37 with an API server, 5,000 nodes: ~560-980 pods/s (scheduler_perf)")
    return 0


if __name__ == "__main__":
    sys.exit(main())
