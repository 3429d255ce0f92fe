"""gangsched <command>: the command-line contract of DESIGN.md."""

from __future__ import annotations

import contextlib
import math
import os
import re
import sys
import time
from collections.abc import Callable, Iterator, Sequence
from typing import TYPE_CHECKING, Any, NoReturn

import click

from . import __version__
from .api.errors import Problem
from .api.gates import GATE_NAMES, FeatureGateError, FeatureGates
from .api.inputs import read_inputs
from .api.loader import display_path
from .builder.command import build_manifests, expanded_inputs
from .report.schedule_output import FLOAT_FREE_ROWS, as_table, as_yaml, json_bytes, json_document
from .schedule import schedule_objects, settle
from .scheduler.backfill_settings import BackfillSettings
from .scheduler.estimates import SOURCES
from .scheduler.policy import QUEUE_POLICIES
from .scheduler.recovery import Recovery

if TYPE_CHECKING:  # imported where used: `schedule` and `validate` need neither (0.05-0.1 s of each start)
    from rich.console import Console

    from .sim.delays import Delay
    from .sim.failures import FailureEvent

GATES_HELP = (
    "Kubernetes-style A=true,B=false. Gates: "
    + ", ".join(GATE_NAMES)
    + ". Upstream v1.37 ships them all off; gangsched turns all six ON by default. "
    "GenericWorkload=false gives classic pod-by-pod scheduling (dependent gates follow it off)."
)


class BadInput(click.BadParameter):
    """A bad option value is bad input like any other: exit code 1, not click's usage-error 2."""

    exit_code = 1


class _FailsAsBadInput:
    """A type whose conversion failures are BadInput (exit 1) rather than click's BadParameter (exit 2)."""

    def fail(
        self, message: str, param: click.Parameter | None = None, ctx: click.Context | None = None
    ) -> NoReturn:
        raise BadInput(message, ctx=ctx, param=param)


class IntRange(_FailsAsBadInput, click.IntRange):
    pass


class FloatRange(_FailsAsBadInput, click.FloatRange):
    pass


class Choice(_FailsAsBadInput, click.Choice):  # type: ignore[type-arg]
    pass


def parse_gates(_ctx: click.Context, _param: click.Parameter, value: str | None) -> FeatureGates:
    try:
        return FeatureGates.parse(value)
    except FeatureGateError as e:
        raise BadInput(str(e)) from e


gates_option = click.option("--feature-gates", "gates", callback=parse_gates, default=None, help=GATES_HELP)


policy_option = click.option(
    "--policy",
    type=Choice(list(QUEUE_POLICIES)),
    default="gang",
    show_default=True,
    help="Queue policy: gang (v1.37: priority, then creation; a later group that fits may overtake), "
    "gang-strict-fifo (no overtaking), gang-sjf (shortest gangsched.io/duration first), "
    "pod-by-pod (groups ignored, as with GenericWorkload off), gang-backfill (gang plus reservations: "
    "later roots start only where they delay none; see --backfill for its depth).",
)

files_option = click.option(
    "-f",
    "--filename",
    "paths",
    multiple=True,
    required=True,
    help="File, directory (recursive) or - for stdin. Repeatable.",
)


def _backfill(ctx: click.Context, _param: click.Parameter, value: str | None) -> BackfillSettings | None:
    """--backfill DEPTH with the other planning options: gang-backfill's settings, or None when off."""
    params = ctx.params
    try:
        depth = 1 if value is None else None if value == "all" else int(value)
        settings = BackfillSettings(
            depth=depth,
            window=math.inf if params.get("bf_window") is None else params["bf_window"],
            resolution=params.get("bf_resolution", 60.0),
            interval=params.get("bf_interval", 30.0),
            aging_rate=params.get("aging_rate", 0.0),
            aging_cap=params.get("aging_cap", 0.0),
            fair_share=params.get("fair_share"),
        )
        if value is None:  # off, unless --policy gang-backfill asks for it (see _with_policy)
            ctx.meta["gang-backfill"] = settings
            return None
        return settings
    except ValueError as e:
        if value is None:
            raise BadInput(str(e)) from e
        raise BadInput(
            f"--backfill {value}: {e}"
            if "invalid literal" not in str(e)
            else f"--backfill {value}: want a number of reservations or 'all'"
        ) from e


def _with_policy(backfill: BackfillSettings | None, policy: str) -> BackfillSettings | None:
    """--policy gang-backfill without --backfill: depth 1 with the planning options given."""
    if backfill is None and policy == "gang-backfill":
        found: BackfillSettings | None = click.get_current_context().meta.get("gang-backfill")
        return found
    return backfill


def _weights(_ctx: click.Context, _param: click.Parameter, value: str | None) -> Any:
    """--fair-share NS=W,... (or `equal`): namespace weights for DRF order, None when off."""
    if value is None:
        return None
    if value == "equal":
        return ()
    weights = []
    for part in value.split(","):
        ns, _, weight = part.partition("=")
        try:
            weights.append((ns.strip(), float(weight)))
        except ValueError:
            raise BadInput(f"--fair-share {value}: want NAMESPACE=WEIGHT,... or 'equal'") from None
    return tuple(weights)


def backfill_options(f: Any) -> Any:
    """Reservations + backfill (docs/backfill.md): `--backfill DEPTH` turns it on (1: EASY, N, all:
    conservative, 0: none); the planning options are Slurm's bf_window, bf_resolution and bf_interval."""
    plan = [
        click.option("--bf-window", type=float, default=None, is_eager=True,
                     help="Planning window: no reservation starts later than this many seconds ahead "
                     "(default: unbounded, see docs/backfill.md)."),
        click.option("--bf-resolution", type=float, default=60.0, show_default=True, is_eager=True,
                     help="Planning time step, seconds."),
        click.option("--bf-interval", type=float, default=30.0, show_default=True, is_eager=True,
                     help="Seconds a backfill plan is kept at most while work starts and ends."),
        click.option("--aging-rate", type=float, default=0.0, show_default=True, is_eager=True,
                     help="Priority points a waiting root gains per hour (backfill's plan order)."),
        click.option("--aging-cap", type=float, default=0.0, show_default=True, is_eager=True,
                     help="At most this many priority points from aging."),
        click.option("--fair-share", callback=_weights, default=None, is_eager=True, metavar="NS=W,...|equal",
                     help="Within a priority level, plan roots of the namespace with the smallest weighted "
                     "dominant resource share (DRF) first; unlisted namespaces weigh 1."),
        click.option("--backfill", "backfill", callback=_backfill, default=None, metavar="DEPTH",
                     help="Reservations (--policy gang-backfill implies depth 1): reserve nodes for "
                     "the first DEPTH waiting roots "
                     "(1: EASY, N, all: conservative, 0: none) and start others only where they delay none."),
    ]  # fmt: skip
    for option in reversed(plan):
        f = option(f)
    return f


# click's context object when the `gangsched` console script (entry.py) runs a command: the process is then
# the command's alone, never a test's or another program's that invoked the CLI in-process.
OWNS_PROCESS = "owns-process"
# When set, `schedule` writes to the file it names the CPU seconds (time.process_time) of its own load phase
# (expanded_inputs: read, default, validate, expand), and does nothing else differently: benchmarks/cli.py
# nets loading out of the whole process's CPU time with it, both measured in one process.
LOAD_CPU_FILE = "GANGSCHED_LOAD_CPU_FILE"


def _end_owned_process() -> None:
    """End the process now, with the output flushed, when the console script runs the command: the
    interpreter's teardown would only free what the run built (the scheduler's pods, snapshot and queue),
    0.02-0.03 s of CPU for 3,000 pods. No atexit handler runs; `schedule` registers none. In-process
    (tests, CliRunner) nothing happens and the command returns."""
    obj = click.get_current_context().obj
    if isinstance(obj, dict) and obj.get(OWNS_PROCESS):
        sys.stdout.flush()
        sys.stderr.flush()
        os._exit(0)


def _record_load_cpu(seconds: float) -> None:
    """Write `seconds` to the file LOAD_CPU_FILE names, if it is set (see LOAD_CPU_FILE)."""
    path = os.environ.get(LOAD_CPU_FILE)
    if path:
        with open(path, "w") as file:
            file.write(f"{seconds}\n")


@click.group(context_settings={"help_option_names": ["-h", "--help"]})
@click.version_option(__version__, prog_name="gangsched")
def main() -> None:
    """Workload-aware (gang) scheduling for Kubernetes v1.37: validate, schedule, simulate."""


@main.command()
@files_option
@gates_option
def validate(paths: Sequence[str], gates: FeatureGates) -> None:
    """Check manifests as the API server would. Exit 0 when all are valid; else one line per problem:
    FILE: KIND NAMESPACE/NAME: FIELD.PATH: MESSAGE, and exit 1."""
    result = read_inputs(paths, gates)
    for p in result.problems:
        click.echo(str(p).replace(p.file, display_path(p.file), 1))
    if result.problems:
        sys.exit(1)
    click.echo(f"{len(result.objects)} objects valid", err=True)


@main.command()
@files_option
@gates_option
@click.option("-o", "--output", type=Choice(["yaml", "json"]), default="yaml", show_default=True)
def build(paths: Sequence[str], gates: FeatureGates, output: str) -> None:
    """Print what Jobs and JobSets expand into, as their controllers would create it: a Job with its
    Workload, PodGroup and pods; a JobSet with its Workload, CompositePodGroup, one PodGroup and Job per
    role replica, and pods. Other objects pass through. Output is valid input for validate and schedule."""
    text, problems = build_manifests(paths, gates, output)
    for p in problems:
        click.echo(str(p).replace(p.file, display_path(p.file), 1), err=True)
    if problems:
        sys.exit(1)
    click.echo(text, nl=False)


def _fail_on_problems(problems: Sequence[Problem]) -> None:
    for p in problems:
        click.echo(str(p).replace(p.file, display_path(p.file), 1), err=True)
    if problems:
        sys.exit(1)


@main.command()
@files_option
@gates_option
@click.option("-o", "--output", type=Choice(["json", "yaml", "table"]), default="table", show_default=True)
@click.option(
    "--seed", type=int, default=0, show_default=True, help="Seed for tie-breaking between equal nodes."
)
@click.option(
    "--scoring",
    type=Choice(["LeastAllocated", "MostAllocated"]),
    default="LeastAllocated",
    show_default=True,
    help="NodeResourcesFit scoring strategy (upstream default: LeastAllocated).",
)
@click.option(
    "--placement-limit",
    is_flag=True,
    help="Score only as many feasible topology placements as upstream's adaptive limit allows "
    "(default: score them all).",
)
@backfill_options
@policy_option
def schedule(
    paths: Sequence[str],
    gates: FeatureGates,
    output: str,
    seed: int,
    scoring: str,
    placement_limit: bool,
    backfill: BackfillSettings | None,
    policy: str,
    **_planning: float,
) -> None:
    """Schedule the given objects until nothing more can change and print the final state.

    Pods with spec.nodeName are already running; objects without creationTimestamp count as created in the
    order they appear; Jobs and JobSets are expanded as `build` shows. Nothing is scheduled if any input is
    invalid (exit 1, one line per problem)."""
    load_started = time.process_time()
    objects, problems = expanded_inputs(paths, gates)
    _record_load_cpu(time.process_time() - load_started)
    _fail_on_problems(problems)  # expanded_inputs defaulted every object, the created ones too
    store = schedule_objects(
        objects,
        gates,
        seed=seed,
        scoring=scoring,
        placement_limit=placement_limit,
        backfill=_with_policy(backfill, policy),
        policy=policy,
    )
    if output == "json":
        click.echo(json_bytes(json_document(store), float_free=FLOAT_FREE_ROWS))
    elif output == "yaml":
        click.echo(as_yaml(store), nl=False)
    else:
        from rich.console import Console

        Console().print(as_table(store))
    _end_owned_process()


_KINDS = {"pod": "Pod", "podgroup": "PodGroup", "pg": "PodGroup", "compositepodgroup": "CompositePodGroup"}


def _explain_target(store: Any, scheduler: Any, target: str) -> tuple[str, str, str]:
    """The root to explain for TARGET = [KIND/][NAMESPACE/]NAME; a pod of a group means its root."""
    parts = target.split("/")
    kinds = ["PodGroup", "CompositePodGroup", "Pod"]
    if len(parts) == 3 or (len(parts) == 2 and parts[0].lower() in _KINDS):
        kind = _KINDS.get(parts[0].lower())
        if kind is None:
            raise BadInput(f"{target}: unknown kind {parts[0]!r} (want pod, podgroup or compositepodgroup)")
        kinds, parts = [kind], parts[1:]
    ns, name = (parts[0], parts[1]) if len(parts) == 2 else ("default", parts[0])
    for kind in kinds:
        if store.get(kind, (ns, name)) is None:
            continue
        if kind == "Pod":
            for pi in scheduler.pods():
                if pi.key == (ns, name):
                    return tuple(scheduler.root_of(pi))
        if kind == "PodGroup":
            return tuple(scheduler.hierarchy.root_of_group((ns, name)))
        return (kind, ns, name)
    raise BadInput(f"{target}: no {' or '.join(kinds)} {ns}/{name} in the input")


@main.command()
@files_option
@click.argument("target")
@gates_option
@click.option("-o", "--output", type=Choice(["text", "json"]), default="text", show_default=True)
@click.option("--seed", type=int, default=0, show_default=True, help="As for schedule.")
@backfill_options
def explain(
    paths: Sequence[str],
    target: str,
    gates: FeatureGates,
    output: str,
    seed: int,
    backfill: BackfillSettings | None,
    bf_window: float | None,
    bf_resolution: float,
    **_planning: float,
) -> None:
    """Why TARGET ([KIND/][NAMESPACE/]NAME: a pod, PodGroup or CompositePodGroup) is pending after
    scheduling the given objects as `schedule` does, and when it is expected to start: failing checks,
    how far short its best domain is, what would have to be evicted, what blocks it, its queue position."""
    import json  # imported where used: `schedule` and `validate` do not need it

    from .scheduler.explain import as_dict, render
    from .scheduler.explain import explain as explain_root
    from .scheduler.plan import PlanSettings

    try:
        settings = PlanSettings(window=math.inf if bf_window is None else bf_window, resolution=bf_resolution)
    except ValueError as e:
        raise BadInput(str(e)) from e
    objects, problems = expanded_inputs(paths, gates)
    _fail_on_problems(problems)  # expanded_inputs defaulted every object, the created ones too
    settled = settle(objects, gates, seed=seed, backfill=backfill)
    root = _explain_target(settled.store, settled.scheduler, target)
    answer = explain_root(settled.scheduler, root, settled.now, settings=settings)
    click.echo(json.dumps(as_dict(answer), indent=2) if output == "json" else render(answer))


@main.command()
@click.option("--seed", type=int, default=0, show_default=True)
def demo(seed: int) -> None:
    """The 8-GPU story: pod-by-pod vs gang scheduling, side by side, then over a day of virtual time (GPU time
    each wastes), no cluster needed."""
    from rich.console import Console

    from .demo import run_day, run_demo
    from .demo.render import render

    Console().print(render(run_demo(seed=seed), run_day(seed=seed)))


def _sim() -> Any:
    """The simulator package, imported when a simulate option is parsed."""
    from . import sim

    return sim


def _duration_option(_ctx: click.Context, param: click.Parameter, value: str | None) -> float | None:
    if value is None:
        return None
    from .api.duration import DurationError, parse_duration

    try:
        return parse_duration(value)
    except DurationError as e:
        raise BadInput(str(e), param=param) from e


def _parse_with(parser: Any) -> Any:
    def callback(_ctx: click.Context, param: click.Parameter, value: Any) -> Any:
        if value is None:
            return None
        try:
            return tuple(parser(v) for v in value) if isinstance(value, tuple) else parser(value)
        except ValueError as e:
            raise BadInput(str(e), param=param) from e

    return callback


def _sizes(text: str) -> dict[int, float]:
    out: dict[int, float] = {}
    for part in text.split(","):
        size, _, weight = part.partition(":")
        if not size.isdigit() or int(size) < 1:
            raise ValueError(f"invalid gang size {size!r} in {text!r}: expected SIZE:WEIGHT,...")
        out[int(size)] = float(weight or 1)
    return out


@main.command()
@click.option("-f", "--filename", "paths", multiple=True, help="Manifests: nodes, pods, PodGroups, Jobs.")
@click.option("--trace", help="philly:PATH, openb:PODS,NODES or synthetic:JOBS.")
@click.option("--nodes", type=int, help="Add N nodes of --gpus-per-node GPUs.")
@click.option("--gpus-per-node", type=int, default=8, show_default=True)
@click.option("--limit", type=int, help="Only the first N jobs of the trace, in submission order.")
@click.option(
    "--philly-namespaces",
    type=IntRange(min=1),
    default=1,
    show_default=True,
    help="philly: map virtual clusters to N namespaces (the N-1 with the most GPU-time alone, the rest "
    "together as vc-rest).",
)
@policy_option
@click.option("--compare", help="Run each of these policies (comma-separated) on the same workload.")
@click.option(
    "--recovery",
    default="wait",
    show_default=True,
    callback=_parse_with(lambda v: Recovery.parse(v)),
    help="Members lost after admission: wait (upstream), restart, continue, release-after:SECONDS.",
)
@click.option(
    "--estimate",
    type=Choice(list(SOURCES)),
    default="oracle",
    show_default=True,
    help="Run-time estimates the planner gets: oracle (the true gangsched.io/duration), limit "
    "(activeDeadlineSeconds, else gangsched.io/expected-duration; else none), history (the mean of the same "
    "owner's last two run times, else as limit). See docs/backfill.md.",
)
@click.option("--seed", type=int, default=0, show_default=True)
@click.option("--until", callback=_duration_option, help="Stop at this virtual time (seconds or 1h30m).")
@click.option(
    "--startup-delay",
    default="0",
    show_default=True,
    callback=_parse_with(lambda v: _sim().Delay.parse(v)),
    help="Pod start-up delay: SECONDS, const:S, exp:MEAN, uniform:LO,HI.",
)
@click.option("--checkpoint", callback=_duration_option, help="Checkpoint every so much progress (1h).")
@click.option(
    "--fail",
    "fail_events",
    multiple=True,
    callback=_parse_with(lambda v: _sim().FailureEvent.parse(v)),
    help="TIME:start|exit|node:TARGET (pod or node name). Repeatable.",
)
@click.option("--fail-start-p", type=float, default=0.0, help="Probability a member fails to start.")
@click.option("--exit-rate", type=float, default=0.0, help="Running members exiting, per hour, cluster-wide.")
@click.option("--node-fail-rate", type=float, default=0.0, help="Node failures per hour, cluster-wide.")
@click.option("--node-repair", callback=_duration_option, default="1h", show_default=True)
@click.option(
    "--termination-seconds",
    type=FloatRange(min=0),
    default=30.0,
    show_default=True,
    help="An evicted pod holds its resources this long before it is gone (0: at once).",
)
@click.option("--arrival-rate", type=float, default=10.0, show_default=True, help="synthetic: jobs per hour.")
@click.option(
    "--gang-sizes",
    default="1:0.6,2:0.2,4:0.15,8:0.05",
    show_default=True,
    callback=_parse_with(_sizes),
    help="synthetic: pods per job with weights.",
)
@click.option("--mean-duration", callback=_duration_option, default="1h", show_default=True)
@gates_option
@click.option("-o", "--output", type=Choice(["table", "json"]), default="table", show_default=True)
@click.option("--plot", "plot_path", help="Write wait CDFs and GPU states to this PNG.")
@click.option("--sweep", is_flag=True, help="Run every policy (--compare) x load (--loads) x seed (--seeds).")
@click.option(
    "--loads",
    default="1",
    show_default=True,
    callback=_parse_with(lambda v: _numbers(v, float, "--loads")),
    help="--sweep: arrival-rate multipliers (every arrival time divided by each).",
)
@click.option(
    "--seeds",
    callback=_parse_with(lambda v: _numbers(v, int, "--seeds")),
    help="--sweep: seeds, comma-separated (default: --seed).",
)
@click.option("--workers", type=IntRange(min=1), help="--sweep: processes at once (default: CPUs).")
@click.option("--ray", "ray_address", help="--sweep on this Ray cluster (pip install 'gangsched[ray]').")
@backfill_options
def simulate(
    paths: Sequence[str],
    trace: str | None,
    nodes: int | None,
    gpus_per_node: int,
    limit: int | None,
    philly_namespaces: int,
    policy: str,
    compare: str | None,
    recovery: Recovery,
    estimate: str,
    seed: int,
    until: float | None,
    startup_delay: Delay,
    checkpoint: float | None,
    fail_events: tuple[FailureEvent, ...],
    fail_start_p: float,
    exit_rate: float,
    node_fail_rate: float,
    node_repair: float | None,
    termination_seconds: float,
    arrival_rate: float,
    gang_sizes: dict[int, float],
    mean_duration: float,
    gates: FeatureGates,
    output: str,
    plot_path: str | None,
    sweep: bool,
    loads: list[float],
    seeds: list[int] | None,
    workers: int | None,
    ray_address: str | None,
    backfill: BackfillSettings | None,
    **_planning: float,
) -> None:
    """Replay jobs on a virtual clock through the scheduler and measure waits, completion times, GPU time
    allocated without progress, fragmentation, failures and lost work. Jobs come from manifests (arrival:
    creationTimestamp, else input order 1 s apart; run time: the gangsched.io/duration annotation) or from
    a trace."""
    import json

    from rich.console import Console

    from .sim.command import SimInputError, SimRequest
    from .sim.command import simulate as run_simulation
    from .sim.failures import FailurePlan
    from .sim.output import plot, table
    from .sim.simulation import SimOptions

    policies = [p.strip() for p in compare.split(",")] if compare else [policy]
    for p in policies:
        if p not in QUEUE_POLICIES:
            raise BadInput(f"--compare: unknown policy {p!r} (known: {', '.join(QUEUE_POLICIES)})")
    request = SimRequest(
        paths=tuple(paths), trace=trace, nodes=nodes, gpus_per_node=gpus_per_node, limit=limit,
        philly_namespaces=philly_namespaces, arrival_rate_per_h=arrival_rate, gang_sizes=gang_sizes,
        mean_duration_s=mean_duration or 1.0,
        seed=seed, gates=gates,
    )  # fmt: skip
    options = SimOptions(
        seed=seed, until=until, startup=startup_delay, checkpoint_s=checkpoint, gates=gates,
        recovery=recovery, backfill=_with_policy(backfill, policy), termination_s=termination_seconds,
        estimate=estimate,
        failures=FailurePlan(fail_events, fail_start_p, exit_rate, node_fail_rate, node_repair),
    )  # fmt: skip
    if sweep:
        if plot_path:
            raise BadInput("--plot: not with --sweep (use --compare for a figure)")
        _sweep(request, options, policies, loads, seeds or [seed], workers, ray_address, output)
        return
    if ray_address:
        raise BadInput("--ray: only with --sweep")
    console = Console(stderr=True)
    try:
        with _progress(console) as report:
            results, sims = run_simulation(request, policies, options, report)
    except SimInputError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if output == "json":
        body: Any = (
            results[0] if len(results) == 1 else {p: r for p, r in zip(policies, results, strict=True)}
        )
        click.echo(json.dumps(body, indent=1))
    else:
        Console().print(table(results, policies))
    if plot_path:
        plot(plot_path, results, policies, [sim.ledger.samples for sim in sims])
        click.echo(f"wrote {plot_path}", err=True)


def _numbers(text: str, kind: Callable[[str], Any], option: str) -> list[Any]:
    try:
        values = [kind(v) for v in text.split(",")]
    except ValueError:
        expected = "expected a comma-separated list of numbers"
        raise ValueError(f"{option}: invalid value {text!r}: {expected}") from None
    if any(v <= 0 for v in values) and option == "--loads":
        raise ValueError(f"{option}: every load must be greater than 0: {text!r}")
    return values


def _sweep(
    request: Any,
    options: Any,
    policies: list[str],
    loads: list[float],
    seeds: list[int],
    workers: int | None,
    ray_address: str | None,
    output: str,
) -> None:
    """`simulate --sweep`: one row per policy x load x seed (sim/sweep.py)."""
    import json

    from .sim.command import SimInputError
    from .sim.output import sweep_table
    from .sim.sweep import grid, run_sweep

    points = grid(policies, loads, seeds)
    try:
        rows = run_sweep(request, options, points, workers=workers, ray_address=ray_address)
    except SimInputError as e:
        click.echo(f"error: {e}", err=True)
        sys.exit(1)
    if output == "json":
        click.echo(json.dumps({"sweep": rows}, indent=1))
    else:
        Console(width=None if sys.stdout.isatty() else 160).print(sweep_table(rows))  # piped: do not squeeze


@contextlib.contextmanager
def _progress(console: Console) -> Iterator[Callable[[str, float, int], None] | None]:
    """A rich progress bar (virtual hours, jobs done) on a terminal; nothing otherwise."""
    if not console.is_terminal:
        yield None
        return
    from rich.progress import Progress, SpinnerColumn, TextColumn, TimeElapsedColumn

    with Progress(SpinnerColumn(), TextColumn("{task.description}"), TimeElapsedColumn(), console=console,
                  transient=True) as progress:  # fmt: skip
        task = progress.add_task("simulating")

        def report(policy: str, now: float, done: int) -> None:
            progress.update(task, description=f"{policy}: {now / 3600:,.0f} h virtual, {done:,} jobs done")

        yield report


@main.command()
@click.option(
    "--config",
    "config_file",
    type=click.Path(dir_okay=False),
    default=None,
    help="A GangschedConfiguration file (KubeSchedulerConfiguration style); flags override it.",
)
@click.option(
    "--kubeconfig",
    type=click.Path(exists=True, dir_okay=False),
    default=None,
    help="Cluster access. Default: the in-cluster ServiceAccount, else $KUBECONFIG, else ~/.kube/config.",
)
@click.option("--scheduler-name", default=None, help="Schedule pods naming this.  [default: gangsched]")
@click.option(
    "--leader-elect/--no-leader-elect",
    default=None,
    help="Run only while holding a coordination.k8s.io/v1 Lease.",
)
@click.option("--leader-elect-resource-namespace", default=None, help="[default: kube-system]")
@click.option("--leader-elect-resource-name", default=None, help="[default: gangsched]")
@click.option("--leader-elect-lease-duration", type=float, default=None, help="Seconds.  [default: 15]")
@click.option("--leader-elect-renew-deadline", type=float, default=None, help="Seconds.  [default: 10]")
@click.option("--leader-elect-retry-period", type=float, default=None, help="Seconds.  [default: 2]")
@click.option("--feature-gates", "feature_gates", default=None, help=GATES_HELP)
@click.option(
    "--metrics-port",
    type=IntRange(1, 65535),
    default=None,
    help="Serve /metrics, /healthz, /readyz and the dashboard (/) on this port.",
)
@click.option(
    "--bind-address", default=None, help="Address the metrics port listens on.  [default: 127.0.0.1]"
)
@click.option(
    "--seed", type=int, default=None, help="Seed for tie-breaking between equal nodes.  [default: 0]"
)
@click.option(
    "--scoring",
    type=Choice(["LeastAllocated", "MostAllocated"]),
    default=None,
    help="NodeResourcesFit scoring strategy.  [default: LeastAllocated]",
)
@click.option(
    "--api-concurrency",
    type=IntRange(min=1),
    default=None,
    help="API writes (binds, ...) at once.  [default: 16]",
)
@backfill_options
@click.option(
    "--explain-pending/--no-explain-pending",
    default=None,
    help="Write why a group waits and when it starts (as `explain`) into a condition "
    "gangsched.io/WhyPending and a WhyPending Event on it, beside upstream's conditions.",
)
@click.option(
    "--policy",
    type=Choice(list(QUEUE_POLICIES)),
    default=None,
    help="Queue policy, as for `schedule` (see there).  [default: gang]",
)
@click.option(
    "--recovery",
    default=None,
    callback=_parse_with(lambda v: Recovery.parse(v)),
    help="Gang members lost after admission (pod failed or deleted, node NotReady or deleted): wait "
    "(upstream: hold the rest until replacements bind), restart (delete the members still bound), continue "
    "(go on while minCount are in place), release-after:SECONDS (wait, then delete the rest).  "
    "[default: wait]",
)
@click.option("-v", "--verbose", is_flag=True, help="Log at debug level.")
def run(config_file: str | None, verbose: bool, feature_gates: str | None, **flags: Any) -> None:
    """Schedule a real cluster as a secondary scheduler: pods with spec.schedulerName = --scheduler-name.

    Settings come from --config (see README), each flag given overrides the file's value."""
    import asyncio
    import dataclasses  # not at the top: no other command needs it (a millisecond at each start)
    import logging

    from .live.config import ConfigError, leader_election_problem, load_config
    from .live.kube import cluster_config
    from .live.runner import RunOptions
    from .live.runner import run as run_live

    try:
        settings = load_config(config_file) if config_file else {}
    except ConfigError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)
    file_gates = settings.pop("feature_gates", "")
    for planning in ("bf_window", "bf_resolution", "bf_interval", "aging_rate", "aging_cap"):
        flags.pop(planning)  # already in --backfill's settings (its callback reads them)
    names = {  # flag -> RunOptions field, where they differ
        "leader_elect_resource_namespace": "lease_namespace",
        "leader_elect_resource_name": "lease_name",
        "leader_elect_lease_duration": "lease_duration",
        "leader_elect_renew_deadline": "renew_deadline",
        "leader_elect_retry_period": "retry_period",
        "policy": "queue_policy",
    }
    settings.update({names.get(k, k): v for k, v in flags.items() if v is not None})
    try:
        # Gate by gate: the flag's gates on top of the file's.
        gates = FeatureGates.parse(",".join(t for t in (file_gates, feature_gates) if t))
    except FeatureGateError as e:
        raise BadInput(str(e), param_hint="'--feature-gates'") from e
    options = RunOptions(gates=gates, **settings)
    options = dataclasses.replace(options, backfill=_with_policy(options.backfill, options.queue_policy))
    if options.leader_elect:
        problem = leader_election_problem(
            options.lease_duration, options.renew_deadline, options.retry_period
        )
        if problem is not None:
            field, message = problem
            flag = "--leader-elect-" + re.sub(r"([A-Z])", r"-\1", field).lower()
            click.echo(f"Error: {flag}: {message}", err=True)
            sys.exit(1)
    try:
        cluster_config(options.kubeconfig)
    except ValueError as e:
        click.echo(f"Error: {e}", err=True)
        sys.exit(1)

    logging.basicConfig(
        level=logging.DEBUG if verbose else logging.INFO,
        format="%(asctime)s %(levelname)s %(name)s: %(message)s",
    )
    logging.getLogger("httpx2").setLevel(logging.WARNING)  # one line per request otherwise
    sys.exit(asyncio.run(run_live(options)))
