"""End-to-end throughput of `gangsched schedule` on the engine benchmark's shapes, with loading netted out.

    python benchmarks/cli.py [--shape NAME ...] [--repeat N]

Each shape is written once as one multi-document YAML file (nodes, then PodGroups and pods; for the plugin
shapes the init pods come first and are scheduled in the same run, so they count as pods too). Then, in
fresh processes, interleaved, `--repeat` times (best run counts: the machine is shared):
- `gangsched schedule -f FILE -o json` (output to /dev/null): everything a user waits for;
- the load alone: `expanded_inputs` (read, default, validate, expand Jobs), in the same kind of process.
The schedule figure is pods / (schedule - load) seconds; the engine figure of the same shape from
`benchmarks/engine.py` (nodes synced before the clock) is printed beside it as the baseline.
Never asserts.
"""

from __future__ import annotations

import argparse
import subprocess
import sys
import tempfile
import time
from pathlib import Path

sys.path.insert(0, str(Path(__file__).parent))

import engine

from gangsched.builder.output import dump_yaml

DEFAULT_SHAPES = ["gangs-3x1000", "gangs-9x1000", "single-5000", "tas-750x4", "tas-9x1000"]
LOAD_ONLY = (
    "import sys; from gangsched.api.gates import FeatureGates; "
    "from gangsched.builder.command import expanded_inputs; "
    "objects, problems = expanded_inputs([sys.argv[1]], FeatureGates()); assert not problems, problems[:3]"
)


def write_shape(name: str, directory: Path) -> tuple[Path, int]:
    built = engine.SHAPES[name]()
    objects = [obj for part in built for obj in part]
    path = directory / f"{name}.yaml"
    path.write_text(dump_yaml(objects))
    return path, sum(1 for o in objects if o.kind == "Pod")


def timed(argv: list[str]) -> float:
    start = time.perf_counter()
    subprocess.run(argv, check=True, stdout=subprocess.DEVNULL)
    return time.perf_counter() - start


def main(argv: list[str] | None = None) -> int:
    parser = argparse.ArgumentParser(
        description=__doc__, formatter_class=argparse.RawDescriptionHelpFormatter
    )
    parser.add_argument("--shape", action="append", help="run only these shapes")
    parser.add_argument("--repeat", type=int, default=3, help="runs per step; the best counts")
    args = parser.parse_args(argv)
    gangsched = str(Path(sys.executable).parent / "gangsched")
    print(
        f"{'shape':<18} {'pods':>6} {'schedule s':>10} {'load s':>7} {'net s':>6} "
        f"{'pods/s':>8} {'engine pods/s':>14}"
    )
    with tempfile.TemporaryDirectory() as tmp:
        for name in args.shape or DEFAULT_SHAPES:
            path, pods = write_shape(name, Path(tmp))
            total, load = float("inf"), float("inf")
            for _ in range(max(1, args.repeat)):
                total = min(total, timed([gangsched, "schedule", "-f", str(path), "-o", "json"]))
                load = min(load, timed([sys.executable, "-c", LOAD_ONLY, str(path)]))
            run = engine.median_run(name, False, "gang", None, 1)
            net = max(total - load, 1e-9)
            print(
                f"{name:<18} {pods:>6} {total:>10.2f} {load:>7.2f} {net:>6.2f} {pods / net:>8.0f} "
                f"{run['bound'] / run['seconds']:>14.0f}"
            )
            sys.stdout.flush()
    return 0


if __name__ == "__main__":
    sys.exit(main())
