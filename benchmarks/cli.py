"""End-to-end throughput of `gangsched schedule` on the engine benchmark's shapes, with loading netted out.

    python benchmarks/cli.py [--shape NAME ...] [--repeat N]

Each shape is written once as one multi-document YAML file (nodes, then PodGroups and pods; for the plugin
shapes the init pods come first and are scheduled in the same run, so they count as pods too). Then, in
fresh processes, after one untimed run of each (bytecode, see `bytecode_env`), interleaved, `--repeat`
times:
- `gangsched schedule -f FILE -o json` (output to /dev/null): everything a user waits for. Its CPU time is
  the child's (user + system, `getrusage`): interpreter start, every import, loading, the scheduler's start,
  the snapshot, the cycles, the JSON, the end. With `GANGSCHED_LOAD_CPU_FILE` set (cli.LOAD_CPU_FILE) the
  command also writes there the CPU seconds of its own load phase (`time.process_time` around
  `expanded_inputs`: read, default, validate, expand Jobs), and does nothing else differently;
- the load alone: `expanded_inputs` in the same kind of process (its imports with the GC paused, as the
  `gangsched` entry point imports the CLI), ended as `schedule` ends its own (`os._exit` once done, cli.py's
  _end_owned_process): left to the interpreter's teardown, it would also free the loaded objects (0.03-0.04 s
  for 9,000), which `schedule` never does, and that would be netted out of `schedule` as if it were part of
  loading. It writes its own load phase's CPU seconds too, measured the same way.

Three figures of pods per CPU second of what is not loading, from the same runs (the machine is shared: the
best run counts, as a busy machine only ever adds time):
- new: pods / (schedule's CPU - its own load phase), the best run. Both terms come from one process, so the
  ~0.1 s by which a process's loading moves from run to run cancels out; and everything but the load work
  itself stays counted, interpreter start and every import (the loader's too) included. Its worst run is
  printed beside it;
- new less loading's start: the same, less what the load-only process spends outside its load phase
  (interpreter start and the loader's imports: what a program that only loads must also pay), its best run.
  It nets out what the old figure nets out, without the two ~1 s load phases of two processes in it;
- old: pods / (schedule's CPU - the load-only process's CPU), the best run of each: the difference of two
  processes of about 1 s each, each moving by up to 0.1 s from run to run, so that a 3,000-pod shape's
  figure moves by a third. Kept for comparison with the figures measured so before 2026-12-01 16:00 UTC;
  its spread is printed too (each run of `schedule` less the load-only run that followed it).
The baseline beside them is the engine figure of the same shape from `benchmarks/engine.py` (nodes synced
before the clock, no loading, snapshot building or output), by CPU time: what end to end could reach at
most. Never asserts.
"""

from __future__ import annotations

import argparse
import os
import resource
import subprocess
import sys
import tempfile
from dataclasses import dataclass
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import engine

from gangsched.builder.output import dump_yaml
from gangsched.cli import LOAD_CPU_FILE

DEFAULT_SHAPES = ["gangs-1000x3", "gangs-3x1000", "gangs-9x1000", "single-5000", "tas-750x4", "tas-9x1000"]
LOAD_ONLY = (  # imports with the cyclic GC paused, as the `gangsched` entry point (entry.py) does
    "import gc, os, sys, time; gc.disable(); from gangsched.api.gates import FeatureGates; "
    "from gangsched.builder.command import expanded_inputs; gc.freeze(); gc.enable(); "
    "started = time.process_time(); objects, problems = expanded_inputs([sys.argv[1]], FeatureGates()); "
    "load_cpu = time.process_time() - started; assert not problems, problems[:3]; "
    f"open(os.environ[{LOAD_CPU_FILE!r}], 'w').write(f'{{load_cpu}}\\n'); "
    "sys.stdout.flush(); os._exit(0)"  # as `schedule` ends (see the module's docstring)
)


@dataclass(frozen=True)
class Run:
    """One process's CPU seconds (user + system, from the parent's rusage) and its own load phase's."""

    cpu: float
    load: float

    @property
    def beyond_load(self) -> float:
        return self.cpu - self.load


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


def timed(argv: list[str], env: dict[str, str], load_file: Path) -> Run:
    """One run of `argv`: its CPU seconds and those its load phase wrote to `load_file`."""
    load_file.unlink(missing_ok=True)
    before = resource.getrusage(resource.RUSAGE_CHILDREN)
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL, env=env | {LOAD_CPU_FILE: str(load_file)})
    after = resource.getrusage(resource.RUSAGE_CHILDREN)
    cpu = (after.ru_utime - before.ru_utime) + (after.ru_stime - before.ru_stime)
    return Run(cpu, float(load_file.read_text()))


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
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print(
        f"{'':<25} {'CPU s, best run':^37}   {'net CPU s':^21}   {'pods per CPU s':^49}\n"
        f"{'shape':<18} {'pods':>6} {'schedule':>8} {'its load':>8} {'load-only':>9} {'its start':>9}   "
        f"{'new':>5} {'worst':>5} {'old':>4} {'worst':>5}   {'new':>6} {'worst':>6} {'new-start':>9} "
        f"{'old':>6} {'worst':>6} {'engine':>7}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        env = bytecode_env(Path(tmp) / "pycache")
        load_file = Path(tmp) / "load-cpu"
        for name in args.shape or DEFAULT_SHAPES:
            path, pods = write_shape(name, Path(tmp))
            steps = {
                "schedule": [gangsched, "schedule", "-f", str(path), "-o", "json"],
                "load": [sys.executable, "-c", LOAD_ONLY, str(path)],
            }
            for step in steps.values():  # untimed: writes the bytecode
                timed(step, env, load_file)
            runs: dict[str, list[Run]] = {"schedule": [], "load": []}
            for _ in range(max(1, args.repeat)):
                for key, step in steps.items():
                    runs[key].append(timed(step, env, load_file))
            schedule = min(runs["schedule"], key=lambda r: r.cpu)
            load_only = min(r.cpu for r in runs["load"])
            load_start = min(r.beyond_load for r in runs["load"])  # interpreter start, loader's imports
            new = min(r.beyond_load for r in runs["schedule"])
            new_worst = max(r.beyond_load for r in runs["schedule"])
            old = schedule.cpu - load_only
            # the old figure's spread: each run of `schedule` less the load-only run that followed it
            old_worst = max(s.cpu - o.cpu for s, o in zip(runs["schedule"], runs["load"], strict=True))
            run = engine.median_run(name, False, "gang", None, 1)
            print(
                f"{name:<18} {pods:>6} {schedule.cpu:>8.2f} {schedule.load:>8.2f} {load_only:>9.2f} "
                f"{load_start:>9.2f}   {new:>5.2f} {new_worst:>5.2f} {old:>4.2f} {old_worst:>5.2f}   "
                f"{_rate(pods, new):>6} {_rate(pods, new_worst):>6} {_rate(pods, new - load_start):>9} "
                f"{_rate(pods, old):>6} {_rate(pods, old_worst):>6} {run['bound'] / run['cpu_seconds']:>7.0f}"
            )
            sys.stdout.flush()
    print(f"load average: {' '.join(f'{x:.2f}' for x in os.getloadavg())}")
    print("target (issue #10): 10,000 pods per CPU s end to end for the gang and tas shapes")
    return 0


if __name__ == "__main__":
    sys.exit(main())
