"""Rendering simulation results: a rich table (one column per run) and a PNG (matplotlib, Agg backend).

The figure has the CDF of job waits per run (log time axis), then the GPU states over time of each run
(progress, starting, waiting for the rest of the gang, below minCount, terminating, free), stacked; at most
four runs.
"""

from __future__ import annotations

from collections.abc import Sequence
from typing import Any

from rich.table import Table

__all__ = ["plot", "sweep_table", "table"]

_ROWS = (
    ("jobs", "jobs", "{:,.0f}"),
    ("completed", "completed", "{:,.0f}"),
    ("avg_jct_s", "avg JCT (h)", "h"),
    ("p50_jct_s", "p50 JCT (h)", "h"),
    ("p99_jct_s", "p99 JCT (h)", "h"),
    ("avg_wait_s", "avg wait (h)", "h"),
    ("max_wait_s", "max wait (h)", "h"),
    ("makespan_s", "makespan (h)", "h"),
    ("gpu_utilization", "GPU utilisation", "{:.1%}"),
    ("idle_allocated_gpu_hours", "idle allocated GPU-h", "{:,.1f}"),
    ("fragmented_gpu_hours", "fragmented free GPU-h", "{:,.1f}"),
    ("preemptions", "preemptions", "{:,.0f}"),
    ("failures", "failures", "{:,.0f}"),
    ("lost_gpu_hours", "lost GPU-h", "{:,.1f}"),
    ("cycles", "scheduling cycles", "{:,.0f}"),
)


def _fmt(value: Any, how: str) -> str:
    if value is None:
        return "-"
    if how == "h":
        return f"{value / 3600:,.2f}"
    return how.format(value)


def table(results: Sequence[dict[str, Any]], labels: Sequence[str]) -> Table:
    """One column per result (its summary), labelled; idle GPU-hours by cause and starvation below."""
    t = Table(title="gangsched simulate")
    t.add_column("metric")
    for label in labels:
        t.add_column(label, justify="right")
    for key, name, how in _ROWS:
        t.add_row(name, *(_fmt(r["summary"].get(key), how) for r in results))
    for cause in ("gang_wait", "starting", "below_min", "terminating", "lost"):
        t.add_row(f"  idle: {cause}", *(f"{r['summary']['idle_by_cause'][cause]:,.1f}" for r in results))
    buckets = sorted({b for r in results for b in r["summary"]["starvation"]})
    for bucket in buckets:
        cells = []
        for r in results:
            s = r["summary"]["starvation"].get(bucket)
            cells.append(
                "-" if s is None else f"{s['max_wait_s'] / 3600:,.2f} / {s['p99_wait_s'] / 3600:,.2f}"
            )
        t.add_row(f"max / p99 wait (h), {bucket}", *cells)
    return t


_SWEEP_COLUMNS = (
    ("completed", "completed", "{:,.0f}"),
    ("avg_wait_s", "avg wait (h)", "h"),
    ("max_wait_s", "max wait (h)", "h"),
    ("avg_jct_s", "avg JCT (h)", "h"),
    ("p99_jct_s", "p99 JCT (h)", "h"),
    ("gpu_utilization", "GPU util", "{:.1%}"),
    ("idle_allocated_gpu_hours", "idle alloc GPU-h", "{:,.1f}"),
    ("preemptions", "preemptions", "{:,.0f}"),
    ("lost_gpu_hours", "lost GPU-h", "{:,.1f}"),
)


def sweep_table(rows: Sequence[dict[str, Any]]) -> Table:
    """One line per sweep point (policy, load, seed) with its main summary figures and wall time."""
    t = Table(title="gangsched simulate --sweep (load: arrival rate x L)")
    for name in ("policy", "load", "seed"):
        t.add_column(name, justify="left" if name == "policy" else "right")
    for _, name, _ in _SWEEP_COLUMNS:
        t.add_column(name, justify="right")
    t.add_column("wall (s)", justify="right")
    for row in rows:
        s = row["summary"]
        cells = [_fmt(s.get(key), how) for key, _, how in _SWEEP_COLUMNS]
        cells[0] = f"{s['completed']:,}/{s['jobs']:,}"
        t.add_row(row["policy"], f"{row['load']:g}", str(row["seed"]), *cells, f"{row['wall_s']:.1f}")
    return t


def plot(path: str, results: Sequence[dict[str, Any]], labels: Sequence[str], samples: Sequence[Any]) -> None:
    """Write the figure to `path` (PNG). `samples`: each run's GpuLedger samples."""
    import matplotlib

    matplotlib.use("Agg")
    import matplotlib.pyplot as plt
    import numpy as np

    shown = min(len(samples), 4)
    fig, axes = plt.subplots(1, 1 + shown, figsize=(6.5 * (1 + shown), 4.8), squeeze=False)
    cdf = axes[0][0]
    longest = 3600.0  # the axis spans at least 1 s to 1 h, so that waits all under 1 s read as such
    for result, label in zip(results, labels, strict=True):
        raw = np.array([j["wait_s"] for j in result["jobs"]])
        waits = np.sort(np.maximum(raw, 1.0))
        if waits.size:
            longest = max(longest, float(waits[-1]))
            x = np.concatenate([[waits[0]], waits]) / 3600
            y = np.concatenate([[0.0], np.arange(1, waits.size + 1) / waits.size])
            quick = float(np.mean(raw < 1.0))
            cdf.step(x, y, where="post", label=f"{label} ({quick:.0%} under 1 s)")
    cdf.set_xscale("log")
    cdf.set_xlim(0.8 / 3600, longest * 1.5 / 3600)
    cdf.set_ylim(0.0, 1.02)
    cdf.set_xlabel("wait from submission to first progress (h, log; under 1 s drawn at 1 s)")
    cdf.set_ylabel("fraction of jobs")
    cdf.set_title("Wait CDF by policy")
    cdf.grid(True, alpha=0.3)
    cdf.legend()
    names = ["progress", "starting", "waiting for gang", "below minCount", "terminating", "free"]
    colors = ["tab:green", "tab:blue", "tab:red", "tab:orange", "tab:purple", "lightgrey"]
    for states, run, label in zip(axes[0][1:], samples, labels, strict=False):
        if not run:
            continue
        data = np.array(run)
        days = data[-1, 0] > 3 * 86400  # a long run reads better in days
        unit, scale = ("days", 86400.0) if days else ("h", 3600.0)
        states.stackplot(data[:, 0] / scale, data[:, 1:7].T, labels=names, colors=colors, step="post")
        states.set_xlabel(f"time ({unit})")
        states.set_xlim(0.0, data[-1, 0] / scale)
        states.set_ylabel("GPUs")
        states.set_title(f"GPU states over time ({label})")
        states.legend(loc="upper left", bbox_to_anchor=(1.0, 1.0), fontsize="small")  # hides no data
    fig.tight_layout()
    fig.savefig(path, dpi=110)
    plt.close(fig)
