"""Workloads from manifests, from a seeded generator and from public traces (philly, openb).

Manifests: a job is a PodGroup with its pods, or a lone Pod. Each PodGroup and pod arrives at its
`creationTimestamp`, or, when the input has none, in input order one second apart (so pods listed
interleaved arrive interleaved); a job is submitted when its PodGroup (or lone pod) arrives, and a pod
listed before its PodGroup arrives with it. Its work is the `gangsched.io/duration` annotation on the
PodGroup, the owning Job or the lone Pod (seconds or a Go duration); without one it runs until the end and is
censored. Times are in seconds from the first submission. Nodes and every other object are there from the
start.

Traces (see the traces' own README for their columns): philly's job of G GPUs is one pod of G GPUs when
G <= 8, else a gang of G/8 pods of 8 GPUs (minCount G/8; the few 12- and 24-GPU jobs: ceil(G/8) equal
pods); openb's pods ask for their GPU share in milli-GPUs (`gangsched.io/milli-gpu`, GPUs x share) on nodes
offering 1000 per GPU. Bad rows are errors naming the file,
line and column.
"""

from __future__ import annotations

import csv
import datetime as dt
import math
from collections.abc import Callable, Iterable
from functools import partial
from typing import Any

import numpy as np
from lightkube.models import core_v1, meta_v1, scheduling_v1beta1

from ..api.duration import DURATION_ANNOTATION, DurationError, parse_duration
from ..store.store import EPOCH
from .workload import GPU, SimJob, Workload

__all__ = [
    "MILLI_GPU",
    "TraceError",
    "from_manifests",
    "gpu_nodes",
    "openb",
    "philly",
    "synthetic",
]

MILLI_GPU = "gangsched.io/milli-gpu"
PROGRESS_ANNOTATION = "gangsched.io/progress"  # gang (default for gangs) | elastic
NAMESPACE = "default"
NODE_GPUS = 8


class TraceError(ValueError):
    """A bad input row or object: the message names the file, the line or object, and the field."""


# --- building objects ------------------------------------------------------------------------------------
def _stamp(submit: float) -> dt.datetime:
    return EPOCH + dt.timedelta(seconds=submit)


def node(name: str, resources: dict[str, str], labels: dict[str, str] | None = None) -> Any:
    return core_v1.Node(
        metadata=meta_v1.ObjectMeta(name=name, labels={"kubernetes.io/hostname": name, **(labels or {})}),
        status=core_v1.NodeStatus(allocatable=resources, capacity=resources),
    )


def gpu_nodes(count: int, gpus_per_node: int) -> list[Any]:
    """`count` nodes of `gpus_per_node` GPUs (and 64 CPUs / 512Gi each: GPUs are what binds)."""
    resources = {"cpu": "64", "memory": "512Gi", "pods": "110", GPU: str(gpus_per_node)}
    return [node(f"node-{i:04d}", resources) for i in range(count)]


def _pod(
    name: str,
    submit: float,
    group: str | None,
    requests: dict[str, str],
    duration: float | None = None,
    namespace: str = NAMESPACE,
) -> Any:
    """A pod of a generated job; a lone pod carries the job's run time (a gang's is on its PodGroup)."""
    annotations = {DURATION_ANNOTATION: repr(duration)} if duration is not None and not group else None
    return core_v1.Pod(
        metadata=meta_v1.ObjectMeta(
            name=name, namespace=namespace, creationTimestamp=_stamp(submit), annotations=annotations
        ),
        spec=core_v1.PodSpec(
            containers=[
                core_v1.Container(name="main", resources=core_v1.ResourceRequirements(requests=requests))
            ],
            schedulingGroup=core_v1.PodSchedulingGroup(podGroupName=group) if group else None,
        ),
    )


def _pod_group(
    name: str, submit: float, min_count: int, duration: float | None, namespace: str = NAMESPACE
) -> Any:
    annotations = {DURATION_ANNOTATION: repr(duration)} if duration is not None else None
    return scheduling_v1beta1.PodGroup(
        metadata=meta_v1.ObjectMeta(
            name=name, namespace=namespace, creationTimestamp=_stamp(submit), annotations=annotations
        ),
        spec=scheduling_v1beta1.PodGroupSpec(
            schedulingPolicy=scheduling_v1beta1.PodGroupSchedulingPolicy(
                gang=scheduling_v1beta1.GangSchedulingPolicy(minCount=min_count)
            )
        ),
    )


def gang_job(
    name: str,
    submit: float,
    duration: float | None,
    pods: int,
    requests: dict[str, str],
    gpus_per_pod: float,
    namespace: str = NAMESPACE,
) -> SimJob:
    """A generated job: a lone pod when `pods == 1`, else a gang of `pods` (minCount = pods)."""
    names = [name] if pods == 1 else [f"{name}-{i}" for i in range(pods)]
    group = None if pods == 1 else name

    def make() -> list[Any]:
        objects = [_pod_group(name, submit, pods, duration, namespace)] if group else []
        return objects + [_pod(n, submit, group, requests, duration, namespace) for n in names]

    return SimJob(namespace, name, submit, duration, pods, pods, "gang", gpus_per_pod, names, group, make)


# --- traces ----------------------------------------------------------------------------------------------
def _rows(path: str, columns: Iterable[str]) -> Iterable[tuple[int, dict[str, str]]]:
    try:
        handle = open(path, newline="")  # noqa: SIM115 (closed below; a generator owns it)
    except OSError as e:
        raise TraceError(f"{path}: cannot read: {e.strerror}") from None
    with handle:
        reader = csv.DictReader(handle)
        missing = [c for c in columns if c not in (reader.fieldnames or [])]
        if missing:
            raise TraceError(f"{path}: line 1: missing column(s) {', '.join(missing)}")
        yield from enumerate(reader, 2)


def _number(path: str, line: int, row: dict[str, str], column: str, kind: Callable[[str], float]) -> float:
    try:
        value = kind(row[column])
    except (TypeError, ValueError):
        raise TraceError(f"{path}: line {line}: {column}: not a number: {row[column]!r}") from None
    if value < 0 or math.isnan(value):
        raise TraceError(f"{path}: line {line}: {column}: must be >= 0: {row[column]!r}")
    return value


def philly(path: str, limit: int | None = None, namespaces: int = 1) -> list[SimJob]:
    """The philly jobs (sorted by submission, ties in file order), optionally only the first `limit`.

    `namespaces` N > 1 maps Philly's virtual clusters (column `cluster`) to N namespaces of unequal demand:
    the N - 1 virtual clusters with the most GPU-time (num_gpus x duration) among the rows replayed each get
    their own namespace `vc-<id>`, all the others share `vc-rest`. With 1, every job is in `default`."""
    raw: list[tuple[float, int, float, int, str]] = []
    for line, row in _rows(path, ("timestamp", "duration", "num_gpus")):
        try:
            stamp = dt.datetime.fromisoformat(row["timestamp"]).replace(tzinfo=dt.UTC)
        except ValueError:
            bad = row["timestamp"]
            raise TraceError(f"{path}: line {line}: timestamp: not YYYY-MM-DD HH:MM:SS: {bad!r}") from None
        duration = _number(path, line, row, "duration", float)
        gpus = int(_number(path, line, row, "num_gpus", int))
        if gpus < 1:
            raise TraceError(f"{path}: line {line}: num_gpus: must be >= 1: {gpus}")
        raw.append((stamp.timestamp(), line, duration, gpus, row.get("cluster") or ""))
    raw.sort()
    if limit is not None:
        raw = raw[:limit]
    namespace_of = _virtual_clusters(path, raw, namespaces)
    start = raw[0][0] if raw else 0.0
    jobs = []
    for i, (when, _, duration, gpus, cluster) in enumerate(raw):
        pods = -(-gpus // NODE_GPUS)
        per_pod = -(-gpus // pods)  # 12 GPUs: 2 pods of 6; 16: 2 of 8
        job = gang_job(f"philly-{i:05d}", when - start, duration, pods, {GPU: str(per_pod)}, per_pod,
                       namespace_of.get(cluster, NAMESPACE))  # fmt: skip
        jobs.append(job)
    return jobs


def _virtual_clusters(path: str, raw: list[tuple[float, int, float, int, str]], count: int) -> dict[str, str]:
    """Virtual cluster -> namespace: the `count - 1` with the most GPU-time alone, the rest together."""
    if count <= 1:
        return {}
    demand: dict[str, float] = {}
    for _, line, duration, gpus, cluster in raw:
        if not cluster:
            raise TraceError(f"{path}: line {line}: cluster: needed to map jobs to namespaces")
        demand[cluster] = demand.get(cluster, 0.0) + duration * gpus
    ranked = sorted(demand, key=lambda c: (-demand[c], c))
    return {c: f"vc-{c}" if i < count - 1 else "vc-rest" for i, c in enumerate(ranked)}


def openb(pods_path: str, nodes_path: str) -> Workload:
    """The openb pods on the openb nodes; GPU shares as milli-GPUs. Pods without a deletion time run on."""
    nodes = []
    for line, row in _rows(nodes_path, ("sn", "cpu_milli", "memory_mib", "gpu")):
        gpus = int(_number(nodes_path, line, row, "gpu", int))
        cpu = int(_number(nodes_path, line, row, "cpu_milli", int))
        mem = int(_number(nodes_path, line, row, "memory_mib", int))
        resources = {"cpu": f"{cpu}m", "memory": f"{mem}Mi", "pods": "110", MILLI_GPU: str(gpus * 1000)}
        nodes.append(node(row["sn"], resources, {"gangsched.io/gpu-model": row.get("model") or ""}))
    raw = []
    for line, row in _rows(pods_path, ("name", "cpu_milli", "memory_mib", "num_gpu", "gpu_milli")):
        created = _number(pods_path, line, row, "creation_time", float)
        deleted = row.get("deletion_time") or ""
        end = _number(pods_path, line, row, "deletion_time", float) if deleted else None
        gpus = int(_number(pods_path, line, row, "num_gpu", int))
        share = int(_number(pods_path, line, row, "gpu_milli", int))
        cpu = int(_number(pods_path, line, row, "cpu_milli", int))
        mem = int(_number(pods_path, line, row, "memory_mib", int))
        raw.append(
            (
                created,
                line,
                row["name"],
                None if end is None else max(end - created, 0.0),
                gpus * share,
                cpu,
                mem,
            )
        )
    raw.sort()
    start = raw[0][0] if raw else 0.0
    jobs = []
    for created, _, name, duration, milli, cpu, mem in raw:
        requests = {"cpu": f"{cpu}m", "memory": f"{mem}Mi"}
        if milli:
            requests[MILLI_GPU] = str(milli)
        jobs.append(gang_job(name, created - start, duration, 1, requests, milli / 1000))
    return Workload(nodes, jobs, gpu_resource=MILLI_GPU, gpu_scale=1000.0, source=f"openb:{pods_path}")


def synthetic(
    *,
    seed: int,
    jobs: int,
    arrival_rate_per_h: float,
    sizes: dict[int, float],
    mean_duration_s: float,
    gpus_per_pod: int = NODE_GPUS,
) -> list[SimJob]:
    """Poisson arrivals, gang sizes drawn from `sizes` (pods -> weight), exponential durations (rounded to
    whole seconds, at least 1). Same seed, same jobs."""
    rng = np.random.default_rng(seed)
    gaps = rng.exponential(3600.0 / arrival_rate_per_h, jobs)
    submits = np.round(np.cumsum(gaps) - gaps[0])
    keys = sorted(sizes)
    weights = np.array([sizes[k] for k in keys], dtype=float)
    picks = rng.choice(len(keys), size=jobs, p=weights / weights.sum())
    durations = np.maximum(np.round(rng.exponential(mean_duration_s, jobs)), 1.0)
    return [
        gang_job(
            f"job-{i:05d}", float(submits[i]), float(durations[i]), keys[picks[i]], {GPU: str(gpus_per_pod)},
            gpus_per_pod,
        )
        for i in range(jobs)
    ]  # fmt: skip


# --- manifests -------------------------------------------------------------------------------------------
def _annotation_duration(obj: Any, where: str) -> float | None:
    raw = ((obj.metadata.annotations or {}) if obj is not None else {}).get(DURATION_ANNOTATION)
    if raw is None:
        return None
    try:
        return parse_duration(str(raw))
    except DurationError as e:
        kind, meta = obj.kind, obj.metadata
        field = f"metadata.annotations[{DURATION_ANNOTATION}]"
        raise TraceError(
            f"{where}: {kind} {meta.namespace or ''}/{meta.name}: {field}: Invalid value: {e}"
        ) from None


def _gpus(pod: Any, resource: str, scale: float) -> float:
    total = 0.0
    for c in pod.spec.containers or []:
        requests = (c.resources.requests or {}) if c.resources else {}
        if resource in requests:
            total += float(requests[resource])
    return total / scale


def _arrivals(objects: list[Any], order: dict[int, int]) -> dict[int, float]:
    """Seconds from the first arrival, per object id: creationTimestamps when the input has any (an object
    without one arrives with the earliest), else input order one second apart."""
    stamps = {id(o): o.metadata.creationTimestamp for o in objects}
    known = [t for t in stamps.values() if t is not None]
    if known:
        first = min(known)
        return {k: (t - first).total_seconds() if t is not None else 0.0 for k, t in stamps.items()}
    ranked = sorted(objects, key=lambda o: order[id(o)])
    return {id(o): float(i) for i, o in enumerate(ranked)}


def from_manifests(objects: list[Any], where: str) -> Workload:
    """Jobs from loaded, defaulted and valid objects (Jobs already expanded), per the module's rules."""
    by_key = {(o.kind, o.metadata.namespace or "", o.metadata.name): o for o in objects}
    pods_of: dict[tuple[str, str], list[Any]] = {}
    lone: list[Any] = []
    cluster: list[Any] = []
    for obj in objects:
        if obj.kind == "Pod" and not obj.spec.nodeName:
            sg = obj.spec.schedulingGroup
            if sg is not None and sg.podGroupName:
                pods_of.setdefault((obj.metadata.namespace, sg.podGroupName), []).append(obj)
            else:
                lone.append(obj)
        elif obj.kind != "PodGroup":
            cluster.append(obj)
    entries: list[tuple[Any, list[Any], Any]] = []  # (PodGroup or None, pods, object naming the job)
    order: dict[int, int] = {id(o): i for i, o in enumerate(objects)}
    for obj in objects:
        if obj.kind == "PodGroup":
            ns = obj.metadata.namespace or ""
            owner = next((r for r in obj.metadata.ownerReferences or [] if r.kind == "Job"), None)
            job = by_key.get(("Job", ns, owner.name)) if owner is not None else None
            pods = pods_of.pop((ns, obj.metadata.name), [])
            if pods:
                entries.append((obj, pods, job))
            else:
                cluster.append(obj)  # every member already bound: it runs from the start, as background
    entries += [(None, [p], None) for p in lone]
    for pods in pods_of.values():  # pods of a PodGroup not in the input wait forever, as upstream
        entries.append((None, pods, None))
    entries.sort(key=lambda e: order[id(e[0] if e[0] is not None else e[1][0])])
    arrival = _arrivals(
        [o for pg, pods, _ in entries for o in ([pg] if pg is not None else []) + pods], order
    )
    jobs: list[SimJob] = []
    for pg, pods, job in entries:
        source = pg if pg is not None else pods[0]
        submit = arrival[id(source)]
        duration = _annotation_duration(pg, where) if pg is not None else None
        if duration is None and job is not None:
            duration = _annotation_duration(job, where)
        if duration is None and pg is None:
            duration = _annotation_duration(pods[0], where)
        gang = pg.spec.schedulingPolicy.gang if pg is not None else None
        progress = "gang" if gang is not None else "basic"
        annotations = (source.metadata.annotations or {}) if source.metadata else {}
        if gang is not None and annotations.get(PROGRESS_ANNOTATION) == "elastic":
            progress = "elastic"
        min_count = int(gang.minCount) if gang is not None else 1
        name = job.metadata.name if job is not None else source.metadata.name
        members = ([pg] if pg is not None else []) + pods
        jobs.append(
            SimJob(
                source.metadata.namespace or "", name, submit, duration, len(pods), min_count, progress,
                _gpus(pods[0], GPU, 1.0), [p.metadata.name for p in pods],
                pg.metadata.name if pg is not None else None, partial(list, members),
                tuple(max(arrival[id(p)] - submit, 0.0) for p in pods),
            )
        )  # fmt: skip
    jobs.sort(key=lambda j: j.submit)
    return Workload(cluster, jobs, source=where)
