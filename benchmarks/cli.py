"""End-to-end throughput of `gangsched schedule` on the engine benchmark's shapes, with loading netted out.

    python benchmarks/cli.py [--shape NAME ...] [--repeat N]

Each shape is written once as one multi-document YAML file (nodes, then PodGroups and pods; for the plugin
shapes the init pods come first and are scheduled in the same run, so they count as pods too). Then, in
fresh processes, after one untimed run of each (bytecode, see `bytecode_env`), interleaved, `--repeat`
times (best run counts: the machine is shared):
- `gangsched schedule -f FILE -o json` (output to /dev/null): everything a user waits for;
- the load alone: `expanded_inputs` (read, default, validate, expand Jobs), in the same kind of process
  (its imports with the GC paused, as the `gangsched` entry point imports the CLI), ended as `schedule`
  ends its own (`os._exit` once done, cli.py's _end_owned_process): left to the interpreter's teardown, it
  would also free the loaded objects (0.03-0.04 s for 9,000), which `schedule` never does, and that would
  be netted out of `schedule` as if it were part of loading.
The schedule figure is pods / (schedule - load) seconds, by wall clock and by CPU time (user + system of the
child processes, which a busy machine disturbs less); each is the best of the runs. The baseline beside
it is the engine figure of the same shape from `benchmarks/engine.py` (nodes synced before the clock, no
loading, snapshot building or output), by wall clock and by CPU time: what end to end could reach at most.
Never asserts.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
import time
from math import inf
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import engine

from gangsched.builder.output import dump_yaml

DEFAULT_SHAPES = ["gangs-3x1000", "gangs-9x1000", "single-5000", "tas-750x4", "tas-9x1000"]
LOAD_ONLY = (  # imports with the cyclic GC paused, as the `gangsched` entry point (entry.py) does
    "import gc, sys; gc.disable(); from gangsched.api.gates import FeatureGates; "
    "from gangsched.builder.command import expanded_inputs; gc.freeze(); gc.enable(); "
    "objects, problems = expanded_inputs([sys.argv[1]], FeatureGates()); assert not problems, problems[:3]; "
    "import os; sys.stdout.flush(); os._exit(0)"  # as `schedule` ends (see the module's docstring)
)


def write_shape(name: str, directory: Path) -> tuple[Path, int]:
    built = engine.SHAPES[name]()
    objects = [obj for part in built for obj in part]
    path = directory / f"{name}.yaml"
    path.write_text(dump_yaml(objects))
    return path, sum(1 for o in objects if o.kind == "Pod")


def bytecode_env(cache: Path) -> dict[str, str]:
    """The environment of the timed processes: bytecode written to and read from `cache`. An installation
    has its modules compiled (pip compiles them); this machine may set PYTHONDONTWRITEBYTECODE, and then
    every process would compile gangsched's modules from source again (0.2-0.3 s, more for `schedule`)."""
    env = {k: v for k, v in os.environ.items() if k != "PYTHONDONTWRITEBYTECODE"}
    env["PYTHONPYCACHEPREFIX"] = str(cache)
    return env


def timed(argv: list[str], env: dict[str, str]) -> tuple[float, float]:
    """(wall seconds, CPU seconds: user + system) of one run of `argv`."""
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env)
    wall = time.perf_counter() - start
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    return wall, (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)


def _rate(pods: int, seconds: float) -> str:
    """Pods per second, or "-" when the noise of a busy machine left no positive difference."""
    return f"{pods / seconds:.0f}" if seconds > 0 else "-"


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shape", action="append", help="run only these shapes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per step; the best counts")
    args = parser.parse_args(argv)
    gangsched = str(Path(sys.executable).parent / "gangsched")
    print(
        f"{'shape':<18} {'pods':>6} {'schedule s':>10} {'load s':>7} {'net s':>6} {'pods/s':>8} "
        f"{'net cpu s':>9} {'cpu pods/s':>10} {'engine pods/s':>14} {'engine cpu':>10}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        env = bytecode_env(Path(tmp) / "pycache")
        for name in args.shape or DEFAULT_SHAPES:
            path, pods = write_shape(name, Path(tmp))
            steps = {
                "total": [gangsched, "schedule", "-f", str(path), "-o", "json"],
                "load": [sys.executable, "-c", LOAD_ONLY, str(path)],
            }
            for argv in steps.values():  # untimed: writes the bytecode
                timed(argv, env)
            best = {"total": (inf, inf), "load": (inf, inf)}
            for _ in range(max(1, args.repeat)):
                for step, argv in steps.items():
                    wall, cpu = timed(argv, env)
                    best[step] = (min(best[step][0], wall), min(best[step][1], cpu))
            run = engine.median_run(name, False, "gang", None, 1)
            net = best["total"][0] - best["load"][0]
            net_cpu = best["total"][1] - best["load"][1]
            print(
                f"{name:<18} {pods:>6} {best['total'][0]:>10.2f} {best['load'][0]:>7.2f} {net:>6.2f} "
                f"{_rate(pods, net):>8} {net_cpu:>9.2f} {_rate(pods, net_cpu):>10} "
                f"{run['bound'] / run['seconds']:>14.0f} {run['bound'] / run['cpu_seconds']:>10.0f}"
            )
            sys.stdout.flush()
    print("target (issue #10): 10,000 pods/s end to end for the gang and tas shapes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
