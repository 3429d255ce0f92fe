"""Whatever the input, `gangsched validate` never shows a traceback: exit 0, or exit 1 with message lines;
and `gangsched schedule` never shows one on what `validate` accepted.

Documents are generated around real manifests (kinds, field names and values gangsched reads, mixed with
wrong types, huge numbers and junk) so that the fuzzer reaches the validator, not only the YAML parser.
"""

from __future__ import annotations

import json
import re
from typing import Any

import yaml
from api_helpers import EXAMPLES, run_validate
from click.testing import CliRunner
from hypothesis import HealthCheck, example, given, settings
from hypothesis import strategies as st

from gangsched.cli import main

KINDS = [
    ("v1", "Pod"),
    ("v1", "Node"),
    ("v1", "Namespace"),
    ("scheduling.k8s.io/v1beta1", "PodGroup"),
    ("scheduling.k8s.io/v1beta1", "Workload"),
    ("scheduling.k8s.io/v1alpha3", "CompositePodGroup"),
    ("batch/v1", "Job"),
    ("scheduling.k8s.io/v1", "PriorityClass"),
    ("policy/v1", "PodDisruptionBudget"),
    ("v1", "List"),
]
FIELDS = [
    "metadata", "name", "namespace", "labels", "spec", "status", "schedulingPolicy", "gang", "basic",
    "minCount", "minGroupCount", "schedulingConstraints", "topology", "key", "disruptionMode", "all",
    "single", "resourceClaims", "resourceClaimName", "resourceClaimTemplateName", "workloadRef",
    "workloadName", "templateName", "parentCompositePodGroupName", "podGroupTemplates",
    "compositePodGroupTemplates", "priority", "priorityClassName", "preemptionPolicy", "containers",
    "resources", "requests", "limits", "cpu", "nvidia.com/gpu", "overhead", "allocatable", "capacity",
    "schedulingGroup", "podGroupName", "scheduling", "parallelism", "template", "value", "items",
    "minAvailable", "maxUnavailable", "controllerRef", "kind", "apiVersion",
]  # fmt: skip
SCALARS = st.one_of(
    st.none(),
    st.booleans(),
    st.integers(min_value=-(2**70), max_value=2**70),
    st.floats(allow_nan=True, allow_infinity=True),
    st.sampled_from(
        ["", "1", "100m", "2Gi", "1e3", "-1", "Never", "PreemptLowerPriority", "x" * 300, "a/b/c"]
    ),
    st.text(max_size=20),
)


def _values() -> st.SearchStrategy[Any]:
    return st.recursive(
        SCALARS,
        lambda inner: st.one_of(
            st.lists(inner, max_size=4),
            st.dictionaries(
                st.one_of(st.sampled_from(FIELDS), st.text(max_size=8), st.integers()), inner, max_size=5
            ),
        ),
        max_leaves=25,
    )


@st.composite
def manifests(draw: st.DrawFn) -> dict[str, Any]:
    api_version, kind = draw(st.sampled_from(KINDS))
    doc: dict[str, Any] = {"apiVersion": api_version, "kind": kind}
    doc.update(draw(st.dictionaries(st.sampled_from(FIELDS), _values(), max_size=5)))
    if draw(st.booleans()):
        doc["metadata"] = {"name": draw(st.sampled_from(["a", "B_", "", "x" * 300])), "namespace": "ns"}
    return doc


_LINE = re.compile(r"^-: .+: .+$")  # FILE: KIND NAMESPACE/NAME: MESSAGE, the file being stdin


def _check(stdin: str | bytes) -> None:
    result = run_validate("-f", "-", stdin=stdin)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert "Traceback" not in result.output
    assert result.exit_code in (0, 1)
    if result.exit_code == 1:
        lines = result.stdout.splitlines()
        assert lines
        assert all(_LINE.match(line) for line in lines), lines


FUZZ = settings(max_examples=150, deadline=None, suppress_health_check=[HealthCheck.too_slow])


@FUZZ
@given(st.lists(manifests(), min_size=1, max_size=3))
def test_yaml_documents(docs: list[dict[str, Any]]) -> None:
    _check(yaml.safe_dump_all(docs))


@FUZZ
@given(_values())
def test_json_values(value: Any) -> None:
    _check(json.dumps(value))


@FUZZ
@given(st.binary(max_size=200))
def test_raw_bytes(data: bytes) -> None:
    _check(data)


@FUZZ
@given(st.text(alphabet=st.sampled_from(list("{}[]:,-'\"&*!|>#%@` \n\tab1")), max_size=80))
def test_yaml_ish_text(text: str) -> None:
    _check(text)


def _example_documents() -> list[dict[str, Any]]:
    docs: list[dict[str, Any]] = []
    for path in sorted((EXAMPLES / "valid").glob("*.yaml")):
        docs += [d for d in yaml.safe_load_all(path.read_text()) if isinstance(d, dict)]
    return docs


EXAMPLE_DOCS = _example_documents()


def _paths(value: Any, prefix: tuple[Any, ...] = ()) -> list[tuple[Any, ...]]:
    """Every position in a document: dict keys and list indexes."""
    out = [prefix]
    if isinstance(value, dict):
        for k, v in value.items():
            out += _paths(v, (*prefix, k))
    elif isinstance(value, list):
        for i, v in enumerate(value):
            out += _paths(v, (*prefix, i))
    return out


def _replace(doc: Any, path: tuple[Any, ...], new: Any) -> Any:
    if not path:
        return new
    copy = dict(doc) if isinstance(doc, dict) else list(doc)
    copy[path[0]] = _replace(doc[path[0]], path[1:], new)
    return copy


@st.composite
def mutated_examples(draw: st.DrawFn, least: int = 1) -> dict[str, Any]:
    """A valid example with `least` to three positions replaced: deep enough to reach every validator."""
    doc: Any = draw(st.sampled_from(EXAMPLE_DOCS))
    for _ in range(draw(st.integers(min_value=least, max_value=3))):
        path = draw(st.sampled_from(_paths(doc)[1:]))
        doc = _replace(doc, path, draw(_values()))
    return dict(doc)


@FUZZ
@given(st.lists(mutated_examples(), min_size=1, max_size=4))
def test_mutated_examples(docs: list[dict[str, Any]]) -> None:
    _check(yaml.safe_dump_all(docs))


def _schedule(stdin: str) -> Any:
    return CliRunner().invoke(main, ["schedule", "-f", "-", "-o", "json"], input=stdin, catch_exceptions=True)


@settings(max_examples=40, deadline=None, suppress_health_check=[HealthCheck.too_slow])
@given(st.lists(mutated_examples(least=0), min_size=1, max_size=4))
@example([d for d in EXAMPLE_DOCS if d["kind"] == "Job" and d["metadata"]["name"] == "resnet"])
def test_schedule_runs_what_validate_accepts(
    docs: list[dict[str, Any]],
) -> None:
    """`schedule` on input `validate` accepted never shows a traceback; it may still refuse what the Jobs
    expand into (the API server would refuse those pods), each line naming the file and the object. Some
    examples are left whole, as a subset of valid examples is often valid: a Job whose PriorityClass is
    not among them is accepted by validate and refused by schedule for the pods it creates."""
    text = yaml.safe_dump_all(docs)
    if run_validate("-f", "-", stdin=text).exit_code != 0:
        return
    result = _schedule(text)
    assert result.exception is None or isinstance(result.exception, SystemExit), result.exc_info
    assert result.exit_code in (0, 1)
    if result.exit_code == 1:
        lines = result.stderr.splitlines()
        assert lines and all(_LINE.match(line) for line in lines), lines
