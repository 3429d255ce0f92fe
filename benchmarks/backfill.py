"""The philly trace on 64 x 8 GPUs under gang, gang-strict-fifo and gang-backfill (depth 1 and 4, and depth 1
with fair share): waits overall and for gangs of 16+ GPUs, utilisation, idle allocated GPU-hours, makespan,
ETA accuracy, Jain's index and per-namespace waits; wall, CPU and peak memory of each replay.

Jobs map to three namespaces by Philly's virtual cluster (`--philly-namespaces 3`: the two virtual clusters
with the most GPU-time alone, the rest together; see sim/inputs.py). gang and gang-strict-fifo run with a
plan of depth 0, which reserves nothing (their decisions are theirs) but plans the head, so that their ETAs
can be measured too. Each replay runs alone in a child process, one after the other (its peak RSS is its
own); the baseline in the same command is the `gang` replay, against which each replay's wall time is a
ratio. Never asserts. Run it niced on a shared machine:

    nice -n 10 python benchmarks/backfill.py PATH/philly_jobs.csv --plot docs/backfill-philly.png
    python benchmarks/backfill.py PATH --limit 5000          # a quick look

Replays are long: `--only LABEL --json FILE` runs one and keeps everything it measured (waits included);
`--from-json FILE,FILE,...` prints the table and draws the plot from such files without replaying.
"""

from __future__ import annotations

import argparse
import hashlib
import json
import resource
import subprocess
import sys
import time
from typing import Any

# label -> (policy, depth (None: no plan), fair share)
RUNS: dict[str, tuple[str, int | None, bool]] = {
    "gang": ("gang", 0, False),
    "gang-strict-fifo": ("gang-strict-fifo", 0, False),
    "gang-backfill d1": ("gang-backfill", 1, False),
    "gang-backfill d4": ("gang-backfill", 4, False),
    "gang-backfill d1 + fair share": ("gang-backfill", 1, True),
}
BIG = 16  # GPUs: the large gangs whose wait backfill must bound
H = 3600.0
TICKS = {
    "1 min": 1 / 60,
    "10 min": 1 / 6,
    "1 h": 1.0,
    "6 h": 6.0,
    "1 day": 24.0,
    "1 week": 168.0,
    "4 weeks": 672.0,
}


def child(path: str, nodes: int, limit: int | None, label: str) -> None:
    import numpy as np

    from gangsched.scheduler.backfill import BackfillSettings
    from gangsched.sim import SimOptions, Simulation, Workload
    from gangsched.sim.inputs import gpu_nodes, philly
    from gangsched.sim.report import job_rows, summary
    from gangsched.store.change import Change

    policy, depth, fair = RUNS[label]
    workload = Workload(gpu_nodes(nodes, 8), philly(path, limit, namespaces=3))
    started, cpu = time.perf_counter(), time.process_time()
    backfill = None if depth is None else BackfillSettings(depth=depth, fair_share=() if fair else None)
    sim = Simulation(workload, SimOptions(policy=policy, backfill=backfill))
    # Every binding (time, pod, node), hashed: two replays decided alike exactly when their digests match.
    bindings = hashlib.sha256()

    def bound(change: Change) -> None:
        if change.action == "bind":
            bindings.update(f"{sim.now!r} {change.key} {change.obj.spec.nodeName}\n".encode())

    sim.store.subscribe(bound)
    sim.run()
    s, jobs = summary(sim), job_rows(sim)
    wall, cpu = time.perf_counter() - started, time.process_time() - cpu
    big = [j["wait_s"] for j in jobs if j["gpus"] >= BIG]
    out = {
        "label": label,
        "wall_s": wall,
        "cpu_s": cpu,
        "rss_mib": resource.getrusage(resource.RUSAGE_SELF).ru_maxrss / 1024,
        "jobs": len(jobs),
        "avg_wait_s": s["avg_wait_s"],
        "p99_wait_s": float(np.percentile([j["wait_s"] for j in jobs], 99)),
        "big_jobs": len(big),
        "big_avg_wait_s": float(np.mean(big)) if big else None,
        "big_p99_wait_s": float(np.percentile(big, 99)) if big else None,
        "big_max_wait_s": max(big) if big else None,
        "utilization": s["gpu_utilization"],
        "idle_allocated_gpu_hours": s["idle_allocated_gpu_hours"],
        "makespan_s": s["makespan_s"],
        "eta": s["eta"],
        "jain_index": s["fairness"]["jain_index"],
        "namespaces": s["namespaces"],
        "series": s["fairness"]["series"],
        "waits": [j["wait_s"] for j in jobs],
        "gpus": [j["gpus"] for j in jobs],
        "cycles": s["cycles"],
        "bindings_sha256": bindings.hexdigest(),
        "summary_sha256": hashlib.sha256(json.dumps(s, sort_keys=True).encode()).hexdigest(),
    }
    print(json.dumps(out))


def run(path: str, nodes: int, limit: int | None, label: str) -> dict[str, Any]:
    cmd = [sys.executable, __file__, "--child", path, str(nodes), str(limit or 0), label]
    done = subprocess.run(cmd, capture_output=True, text=True, check=True)
    return json.loads(done.stdout.strip().splitlines()[-1])  # type: ignore[no-any-return]


def _h(seconds: float | None) -> str:
    return "-" if seconds is None else f"{seconds / H:,.1f}"


def table(results: list[dict[str, Any]]) -> str:
    """The comparison as a Markdown table, one column per replay."""
    rows: list[tuple[str, list[str]]] = [
        ("avg / p99 wait, all jobs (h)", [f"{_h(r['avg_wait_s'])} / {_h(r['p99_wait_s'])}" for r in results]),
        (
            f"avg / p99 / max wait, gangs of {BIG}+ GPUs (h)",
            [
                f"{_h(r['big_avg_wait_s'])} / {_h(r['big_p99_wait_s'])} / {_h(r['big_max_wait_s'])}"
                for r in results
            ],
        ),
        ("GPU utilisation", [f"{r['utilization']:.1%}" for r in results]),
        ("idle allocated GPU-h", [f"{r['idle_allocated_gpu_hours']:,.0f}" for r in results]),
        ("makespan (days)", [f"{r['makespan_s'] / 86400:,.1f}" for r in results]),
        (
            "ETA error median / p90 (h)",
            [f"{_h(r['eta']['median_abs_error_s'])} / {_h(r['eta']['p90_abs_error_s'])}" for r in results],
        ),
        (
            "jobs with an ETA / admitted",
            [f"{r['eta']['jobs_with_eta']:,} / {r['eta']['admitted_with_eta']:,}" for r in results],
        ),
        (
            "Jain's index (backlogged namespaces)",
            [f"{r['jain_index']:.3f}" if r["jain_index"] else "-" for r in results],
        ),
    ]
    for ns in results[0]["namespaces"]:
        cells = []
        for r in results:
            n = r["namespaces"][ns]
            cells.append(f"{_h(n['avg_wait_s'])} / {_h(n['p99_wait_s'])} ({n['average_share']:.0%})")
        rows.append((f"{ns}: avg / p99 wait (h) (avg share)", cells))
    rows.append(
        (
            "wall / CPU (s), peak RSS (MiB)",
            [f"{r['wall_s']:.0f} / {r['cpu_s']:.0f}, {r['rss_mib']:.0f}" for r in results],
        )
    )
    rows.append(("wall vs gang", [f"{r['wall_s'] / results[0]['wall_s']:.2f}x" for r in results]))
    head = "| | " + " | ".join(r["label"] for r in results) + " |"
    lines = [head, "|---" * (len(results) + 1) + "|"]
    lines += [f"| {name} | " + " | ".join(cells) + " |" for name, cells in rows]
    return "\n".join(lines)


def plot(path: str, results: list[dict[str, Any]]) -> None:
    """Wait CDFs (all jobs; gangs of 16+ GPUs) per replay, and each namespace's share over time with and
    without fair share (headless)."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    fig, axes = plt.subplots(1, 3, figsize=(20, 5.5))
    for ax, title, pick, tail in (
        (axes[0], "all jobs", lambda r: r["waits"], True),
        (
            axes[1],
            f"gangs of {BIG}+ GPUs",
            lambda r: [w for w, g in zip(r["waits"], r["gpus"], strict=True) if g >= BIG],
            False,
        ),
    ):
        for r in results:
            waits = np.sort(np.maximum(np.array(pick(r), dtype=float), 60.0)) / H
            if not waits.size:
                continue
            below = np.arange(1, waits.size + 1) / waits.size
            # Most jobs start at once: for all jobs the tail (the fraction still waiting) on a log axis
            # is what differs between policies; the large gangs are few enough for a plain CDF.
            ax.step(waits, 1.0 - below + 1 / waits.size if tail else below, where="post", label=r["label"])
        ax.set_xscale("log")
        ax.set_xlim(1 / 60, max(ax.get_xlim()[1], 24 * 7 * 4))
        ax.set_xticks(list(TICKS.values()), list(TICKS))
        ax.minorticks_off()
        ax.set_xlabel("wait, submission to first progress (log scale; under 1 min shown at 1 min)")
        if tail:
            ax.set_yscale("log")
            ax.set_ylabel("fraction of jobs that waited at least this long (log)")
            ax.set_title("Waits, all jobs (tail)")
        else:
            ax.set_ylabel("fraction of jobs that waited at most this long")
            ax.set_title(f"Wait CDF, {title}")
        ax.grid(True, alpha=0.3)
        ax.legend(fontsize="small")
    ax = axes[2]
    styles = {"gang-backfill d1": "--", "gang-backfill d1 + fair share": "-"}
    for r in results:
        if r["label"] not in styles:
            continue
        t = np.array(r["series"]["t_s"]) / 86400
        for i, ns in enumerate(k for k in r["series"] if k != "t_s"):
            ax.plot(t, r["series"][ns], styles[r["label"]], color=f"C{i}", label=f"{ns} ({r['label']})")
    ax.set_xlabel("time (days)")
    ax.set_ylabel("share of the cluster's GPUs")
    ax.set_title("Namespace shares over time (bins of 1/200 of the run)")
    ax.grid(True, alpha=0.3)
    ax.legend(fontsize="x-small")
    fig.tight_layout()
    fig.savefig(path, dpi=100)
    plt.close(fig)


def main() -> None:
    if sys.argv[1:2] == ["--child"]:
        path, nodes, limit, label = sys.argv[2:6]
        child(path, int(nodes), int(limit) or None, label)
        return
    parser = argparse.ArgumentParser(description=__doc__.splitlines()[0])
    parser.add_argument("path", nargs="?", help="philly_jobs.csv (not with --from-json)")
    parser.add_argument("--nodes", type=int, default=64)
    parser.add_argument("--limit", type=int, help="only the first N jobs (in submission order)")
    parser.add_argument("--only", help="comma-separated labels of the replays to run (default: all)")
    parser.add_argument("--plot", help="write the figure to this PNG")
    parser.add_argument("--json", help="write every replay's figures (waits included) to this file")
    parser.add_argument("--from-json", help="comma-separated files of --json: no replay, table and plot only")
    args = parser.parse_args()
    results = []
    if args.from_json:
        for name in args.from_json.split(","):
            with open(name) as f:
                results += json.load(f)
    else:
        for label in args.only.split(",") if args.only else list(RUNS):
            r = run(args.path, args.nodes, args.limit, label)
            line = (f"{label}: {r['jobs']:,} jobs, wall {r['wall_s']:.0f} s, cpu {r['cpu_s']:.0f} s, "
                    f"peak RSS {r['rss_mib']:.0f} MiB, {r['cycles']:,} cycles, "
                    f"bindings {r['bindings_sha256'][:12]}, summary {r['summary_sha256'][:12]}")  # fmt: skip
            print(line, file=sys.stderr, flush=True)
            results.append(r)
            if args.json:  # after each replay: what finished is kept if a later one is stopped
                with open(args.json, "w") as f:
                    json.dump(results, f)
    results.sort(key=lambda r: list(RUNS).index(r["label"]))
    print(table(results))
    if args.plot:
        plot(args.plot, results)
        print(f"wrote {args.plot}", file=sys.stderr)


if __name__ == "__main__":
    main()
