"""The demo as a side-by-side table a person reads in ten seconds."""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from rich.console import Group
from rich.table import Table
from rich.text import Text

from . import WORKERS, DemoStep, WorldState

__all__ = ["render"]


def _cell(state: WorldState) -> str:
    a, b = state.bound["train-a"], state.bound["train-b"]
    running = ", ".join(state.runnable) or "none"
    return f"A {a}/6  B {b}/6  idle {state.idle_gpus}  running: {running}"


def day_table(day: dict[str, dict[str, Any]]) -> Table:
    """The day in the simulator: what each world did with its 8 x 24 = 192 GPU-hours."""
    table = Table(
        title="A day of virtual time: each training needs 2 h of all 6 workers (gangsched simulate)"
    )
    table.add_column("")
    for policy in day:
        table.add_column(policy, justify="right")
    rows: list[tuple[str, Callable[[dict[str, Any]], str]]] = [
        ("trainings completed", lambda s: f"{s['completed']} of {s['jobs']}"),
        ("GPU-hours making progress", lambda s: f"{s['gpu_utilization'] * s['gpus'] * 24:.1f}"),
        ("GPU-hours allocated, waiting for the rest of the gang",
         lambda s: f"{s['idle_by_cause']['gang_wait']:.1f}"),
        ("GPU utilisation", lambda s: f"{s['gpu_utilization']:.1%}"),
    ]  # fmt: skip
    for name, cell in rows:
        table.add_row(name, *(cell(s) for s in day.values()))
    return table


def render(steps: list[DemoStep], day: dict[str, dict[str, Any]] | None = None) -> Group:
    table = Table(
        title="8 GPUs, two trainings of 6 workers x 1 GPU, pods arriving interleaved (a, b, a, b, ...)"
    )
    table.add_column("pods arrived", justify="right")
    table.add_column("pod-by-pod (GenericWorkload=false)")
    table.add_column("gang (PodGroup minCount 6)")
    for s in steps:
        table.add_row(str(s.arrived), _cell(s.pod_by_pod), _cell(s.gang))
    last = steps[-1]
    allocated = sum(last.pod_by_pod.bound.values())
    lines = [
        "",
        f"pod-by-pod: {allocated} GPUs allocated, "
        f"jobs able to run: {', '.join(last.pod_by_pod.runnable) or 'none'}.",
    ]
    # The article's picture: GPUs sit idle, yet even all of them would not complete any job.
    for s in steps:
        st = s.pod_by_pod
        if st.idle_gpus and max(st.bound.values()) + st.idle_gpus < WORKERS:
            a, b = st.bound["train-a"], st.bound["train-b"]
            lines[-1] += (
                f" With {s.arrived} pods arrived: A {a} + B {b} bound and {st.idle_gpus} idle, "
                "yet even all idle GPUs would not complete either job."
            )
            break
    for job, why in sorted(last.pod_by_pod.waiting.items()):
        lines.append(f"  {job} waits: {why}")
    lines.append(
        f"gang: {', '.join(last.gang.runnable) or 'none'} admitted whole; "
        f"{last.gang.idle_gpus} GPUs stay free for work that can use them."
    )
    for job, why in sorted(last.gang.waiting.items()):
        lines.append(f"  {job} waits: {why}")
    parts: list[Any] = [table, Text("\n".join(lines))]
    if day is not None:
        parts += [Text(""), day_table(day)]
    return Group(*parts)
