"""gangsched <command>: the command-line contract of DESIGN.md."""

from __future__ import annotations

import sys
from collections.abc import Sequence

import click

from . import __version__
from .api.gates import GATE_NAMES, FeatureGateError, FeatureGates
from .api.inputs import read_inputs
from .api.loader import display_path

GATES_HELP = (
    "Kubernetes-style A=true,B=false. Gates: "
    + ", ".join(GATE_NAMES)
    + ". Upstream v1.37 ships them all off; gangsched turns all six ON by default. "
    "GenericWorkload=false gives classic pod-by-pod scheduling (dependent gates follow it off)."
)


def parse_gates(_ctx: click.Context, _param: click.Parameter, value: str | None) -> FeatureGates:
    try:
        return FeatureGates.parse(value)
    except FeatureGateError as e:
        raise click.BadParameter(str(e)) from e


gates_option = click.option("--feature-gates", "gates", callback=parse_gates, default=None, help=GATES_HELP)


files_option = click.option(
    "-f",
    "--filename",
    "paths",
    multiple=True,
    required=True,
    help="File, directory (recursive) or - for stdin. Repeatable.",
)


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
