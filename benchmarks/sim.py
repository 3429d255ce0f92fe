"""Replay the philly trace through the simulator under `gang`, on 352 x 8 and 64 x 8 GPUs.

Each configuration runs in a fresh child process, so that its peak memory (ru_maxrss) is its own. Prints wall
and CPU seconds, peak RSS, jobs per second, scheduling cycles run and skipped by the room bound, and the
summary. The baseline in the same command is the same replay with selective requeueing turned off (every
waiting root woken at every release, as NodeResourcesFit's hint does upstream), on the first `--baseline-jobs`
jobs only (it is far slower); the ratio compares jobs per second. Never asserts.

    python benchmarks/sim.py PATH                              # PATH: your copy of philly_jobs.csv
    python benchmarks/sim.py PATH --limit 20000 --baseline-jobs 2000
    python benchmarks/sim.py PATH --nodes 64 --no-baseline --plot philly   # one config, philly-64x8.png
"""

from __future__ import annotations

import argparse
import json
import resource
import subprocess
import sys
import time
from typing import Any

CONFIGS = (("light load", 352), ("heavy queueing", 64))


def child(path: str, nodes: int, limit: int | None, wake_all: bool, plot_prefix: str) -> None:
    from gangsched.scheduler.scheduler import Scheduler
    from gangsched.sim import SimOptions, Workload
    from gangsched.sim.command import run_one
    from gangsched.sim.inputs import gpu_nodes, philly

    if wake_all:

        def wake_everyone(self: Scheduler) -> None:
            self.queue.move_all_to_active()
            self.waiters.clear()

        Scheduler._released = wake_everyone  # type: ignore[method-assign]
        Scheduler._bound_fails = lambda self, *args: False  # type: ignore[method-assign]
    started, cpu = time.perf_counter(), time.process_time()
    workload = Workload(gpu_nodes(nodes, 8), philly(path, limit))
    result, sim = run_one(workload, SimOptions(policy="gang"))
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    summary = result["summary"]
    out = {
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "jobs": len(workload.jobs),
        "cycles": sim.scheduler.cycles,
        "skipped": sim.scheduler.skipped,
        "summary": {k: v for k, v in summary.items() if k != "starvation"},
        "starvation": summary["starvation"],
    }
    if plot_prefix:
        from gangsched.sim.output import plot

        name = f"{plot_prefix}-{nodes}x8.png"
        plot(name, [result], [f"gang, {nodes} x 8 GPUs"], [sim.ledger.samples])
        out["plot"] = name
    print(json.dumps(out))


def run(path: str, nodes: int, limit: int | None, wake_all: bool = False, plot_prefix: str = "") -> Any:
    args = [path, str(nodes), str(limit or 0), str(int(wake_all)), plot_prefix]
    cmd = [sys.executable, __file__, "--child", *args]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        path, nodes, limit, wake_all, plot_prefix = sys.argv[2:7]
        child(path, int(nodes), int(limit) or None, wake_all == "1", plot_prefix)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", help="the philly trace (philly_jobs.csv; not shipped)")
    parser.add_argument("--limit", type=int, help="only the first N jobs")
    parser.add_argument("--nodes", type=int, choices=[n for _, n in CONFIGS], help="only this configuration")
    parser.add_argument("--baseline-jobs", type=int, default=2000)
    parser.add_argument("--no-baseline", action="store_true", help="skip the baseline and its comparison")
    parser.add_argument("--plot", default="", help="write PREFIX-<nodes>x8.png per configuration")
    args = parser.parse_args()
    for label, nodes in CONFIGS:
        if args.nodes is not None and nodes != args.nodes:
            continue
        r = run(args.path, nodes, args.limit, plot_prefix=args.plot)
        s = r["summary"]
        h = 3600.0
        print(f"== {nodes} x 8 GPUs ({label}): {r['jobs']:,} jobs")
        print(f"   wall {r['wall_s']:.1f} s, cpu {r['cpu_s']:.1f} s, peak RSS {r['rss_mib']:.0f} MiB, "
              f"{r['jobs'] / r['wall_s']:,.0f} jobs/s")  # fmt: skip
        print(f"   cycles {r['cycles']:,} (+{r['skipped']:,} ruled out by the room bound)")
        print(f"   completed {s['completed']:,}, avg JCT {s['avg_jct_s'] / h:.2f} h, "
              f"p50 {s['p50_jct_s'] / h:.2f} h, p99 {s['p99_jct_s'] / h:.1f} h")  # fmt: skip
        print(f"   avg wait {s['avg_wait_s'] / h:.2f} h, max wait {s['max_wait_s'] / h:.1f} h, "
              f"makespan {s['makespan_s'] / 86400:.1f} days")  # fmt: skip
        print(f"   utilisation {s['gpu_utilization']:.1%}, idle allocated "
              f"{s['idle_allocated_gpu_hours']:,.0f} GPU-h, "
              f"fragmented {s['fragmented_gpu_hours']:,.0f} GPU-h")  # fmt: skip
        for bucket, b in r["starvation"].items():
            print(f"   {bucket:>10}: {b['jobs']:>6,} jobs, max wait {b['max_wait_s'] / h:8.1f} h, "
                  f"p99 {b['p99_wait_s'] / h:8.1f} h")  # fmt: skip
        if "plot" in r:
            print(f"   plot: {r['plot']}")
        if args.no_baseline:
            continue
        base = run(args.path, nodes, args.baseline_jobs, wake_all=True)
        ours = run(args.path, nodes, args.baseline_jobs)
        ratio = (ours["jobs"] / ours["wall_s"]) / (base["jobs"] / base["wall_s"])
        print(f"   baseline, first {base['jobs']:,} jobs with every waiting root woken at every release: "
              f"{base['jobs'] / base['wall_s']:,.0f} jobs/s, {base['cycles']:,} cycles")  # fmt: skip
        print(f"   ours on the same jobs: {ours['jobs'] / ours['wall_s']:,.0f} jobs/s, "
              f"{ours['cycles']:,} cycles: {ratio:.1f}x the baseline")  # fmt: skip


if __name__ == "__main__":
    main()
