"""How long loading 100,000 pods takes: load_paths + apply_defaults + validate, against plain YAML parsing.

Generates N pods (default 100,000; each in a PodGroup of 8, with requests, labels and a schedulingGroup) as
one multi-document YAML file in a temporary directory, then runs each measured step in a fresh child
process so that each peak-memory figure (ru_maxrss) belongs to that step alone:

- baseline: `yaml.load_all(text, Loader=CSafeLoader)`, the least any YAML reader has to do;
- gangsched: `load_paths` (YAML + decoding into lightkube-models), `apply_defaults`, `validate`.

Each step runs `--repeat` times (default 3), interleaved, and the best run counts: the machine may be shared,
and the least disturbed run is the closest to what the code costs. CPU seconds (user + system of the child)
are printed beside wall seconds for the same reason. Prints seconds, objects/s, peak RSS, and gangsched's
time as a multiple of the baseline. Never asserts.

    python benchmarks/load.py            # 100,000 pods
    python benchmarks/load.py --pods 20000 --repeat 1
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import tempfile
import time
from pathlib import Path

GROUP_SIZE = 8


def generate(path: Path, pods: int) -> int:
    """Write `pods` pods and their PodGroups; returns the number of objects written."""
    groups = (pods + GROUP_SIZE - 1) // GROUP_SIZE
    with path.open("w") as f:
        for g in range(groups):
            f.write(
                "---\napiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\n"
                f"metadata: {{name: group-{g}, namespace: bench}}\n"
                f"spec:\n  schedulingPolicy: {{gang: {{minCount: {GROUP_SIZE}}}}}\n"
            )
        for i in range(pods):
            f.write(
                "---\napiVersion: v1\nkind: Pod\n"
                f"metadata:\n  name: pod-{i}\n  namespace: bench\n"
                f"  labels: {{app: trainer, shard: s{i % 16}}}\n"
                "spec:\n"
                f"  schedulingGroup: {{podGroupName: group-{i // GROUP_SIZE}}}\n"
                "  containers:\n"
                "  - name: main\n    image: trainer:1.0\n"
                "    resources:\n"
                "      requests: {cpu: 500m, memory: 2Gi, nvidia.com/gpu: 1}\n"
                "      limits: {memory: 2Gi, nvidia.com/gpu: 1}\n"
            )
    return groups + pods


def _peak_mib() -> float:
    return resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024  # Linux reports KiB


def _cpu() -> float:
    usage = resource.getrusage(resource.RUSAGE_SELF)
    return usage.ru_utime + usage.ru_stime


def run_baseline(path: Path) -> dict[str, float]:
    import yaml

    loader = getattr(yaml, "CSafeLoader", yaml.SafeLoader)
    text = path.read_text()
    start, cpu = time.perf_counter(), _cpu()
    docs = [d for d in yaml.load_all(text, Loader=loader) if d is not None]
    seconds = time.perf_counter() - start
    return {"objects": len(docs), "seconds": seconds, "cpu": _cpu() - cpu, "peak_mib": _peak_mib()}


def run_gangsched(path: Path) -> dict[str, float]:
    from gangsched.api import FeatureGates, load_paths
    from gangsched.api.defaults import apply_defaults
    from gangsched.api.validation import validate

    t0, cpu = time.perf_counter(), _cpu()
    result = load_paths([str(path)])
    t1 = time.perf_counter()
    default_problems = apply_defaults(item.obj for item in result.objects)
    t2 = time.perf_counter()
    problems = validate(result.objects, FeatureGates())
    t3 = time.perf_counter()
    return {
        "objects": len(result.objects),
        "problems": len(result.problems) + len(default_problems) + len(problems),
        "load": t1 - t0,
        "defaults": t2 - t1,
        "validate": t3 - t2,
        "seconds": t3 - t0,
        "cpu": _cpu() - cpu,
        "peak_mib": _peak_mib(),
    }


def _child(step: str, path: Path) -> dict[str, float]:
    out = subprocess.run(
        [sys.executable, __file__, "--step", step, "--file", str(path)],
        check=True,
        capture_output=True,
        text=True,
    )
    result: dict[str, float] = json.loads(out.stdout)
    return result


def _row(label: str, r: dict[str, float]) -> None:
    print(
        f"{label:<36}{r['seconds']:>9.2f}{r['cpu']:>9.2f}{r['objects'] / r['seconds']:>12,.0f}"
        f"{r['peak_mib']:>9.0f} MiB"
    )


def _best(runs: list[dict[str, float]]) -> dict[str, float]:
    return min(runs, key=lambda r: r["seconds"])


def main() -> None:
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("--pods", type=int, default=100_000)
    parser.add_argument("--repeat", type=int, default=3, help="runs of each step; the fastest counts")
    parser.add_argument("--step", choices=["baseline", "gangsched"], help=argparse.SUPPRESS)
    parser.add_argument("--file", type=Path, help=argparse.SUPPRESS)
    args = parser.parse_args()
    if args.step:
        run = run_baseline if args.step == "baseline" else run_gangsched
        print(json.dumps(run(args.file)))
        return
    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "pods.yaml"
        objects = generate(path, args.pods)
        size_mib = path.stat().st_size / 2**20
        print(f"{args.pods:,} pods + {objects - args.pods:,} PodGroups, {size_mib:.0f} MiB of YAML")
        base_runs, our_runs = [], []
        for _ in range(max(1, args.repeat)):
            base_runs.append(_child("baseline", path))
            our_runs.append(_child("gangsched", path))
        base, ours = _best(base_runs), _best(our_runs)
    print(f"best of {max(1, args.repeat)} runs each, interleaved")
    print(f"{'step':<36}{'seconds':>9}{'cpu s':>9}{'objects/s':>12}{'peak RSS':>13}")
    _row("baseline: yaml.load_all (C loader)", base)
    _row("gangsched: load + defaults + validate", ours)
    print(
        f"  load_paths {ours['load']:.2f} s, apply_defaults {ours['defaults']:.2f} s, "
        f"validate {ours['validate']:.2f} s; problems found: {ours['problems']:.0f}"
    )
    print(f"gangsched / baseline: {ours['seconds'] / base['seconds']:.2f}x the time")


if __name__ == "__main__":
    main()
