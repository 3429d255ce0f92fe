"""yamlfast.load_all gives exactly what yaml.load_all(CSafeLoader) gives, errors included."""

from __future__ import annotations

from typing import Any

import pytest
import yaml
from api_helpers import EXAMPLES
from hypothesis import given, settings
from hypothesis import strategies as st

from gangsched.api.yamlfast import iter_all, load_all

LOADER: Any = getattr(yaml, "CSafeLoader", yaml.SafeLoader)


def pyyaml(text: str) -> list[Any]:
    return list(yaml.load_all(text, Loader=LOADER))


def _same(text: str) -> None:
    try:
        expected = pyyaml(text)
    except yaml.YAMLError as e:
        with pytest.raises(type(e)) as got:
            load_all(text)
        assert str(got.value) == str(e)
        return
    result = load_all(text)
    assert result == expected
    assert [type(d) for d in result] == [type(d) for d in expected]


TRICKY = {
    "scalars": "a: 1\nb: -0\nc: +12\nd: 012\ne: 0x1F\nf: 1_000\ng: 190:20:30\nh: 1.5\ni: .inf\nj: 1e3\n",
    "bools": "[yes, Yes, YES, no, on, Off, true, FALSE, y, n, yEs]",
    "quoted": "a: '1'\nb: \"yes\"\nc: !!str 5\nd: ! 7\ne: |\n  block\n  text\nf: >-\n  folded\n",
    "timestamps": "a: 2001-12-14\nb: 2001-12-14t21:59:43.10-05:00\n",
    "anchors": "a: &x {k: [1, 2]}\nb: *x\n",
    "merge": "base: &b {x: 1}\nderived: {<<: *b, y: 2}\n",
    "merge-plain": "<<: {a: 1}\n",
    "tags": "a: !!binary aGVsbG8=\nb: !!set {x, y}\nc: !!float 3\n",
    "documents": "---\n---\na: 1\n...\n---\n- x\n",
    "empty": "",
    "comments-only": "# nothing\n",
    "complex-key": "? [a, b]\n: c\n",
    "unhashable-flow-key": "{[a]: b}\n",
    "duplicate-keys": "a: 1\na: 2\n",
    "nested": "a: [{b: [c, {d: e}]}, [], {}]\n",
    "bad-syntax": "a: {b: c\nd: e\n",
    "bad-indent": "a:\n  b: 1\n c: 2\n",
    "value-key": "=: 1\n",
    "unknown-tag": "a: !custom x\n",
    "scalar-root": "just text\n",
    "null-key": "~: 1\nnull: 2\n",
    "anchor-after-documents": "a: 1\n---\nb: 2\n---\nc: &x [1]\nd: *x\n---\ne: 3\n",
    "error-after-documents": "a: 1\n---\nb: 2\n---\nc: {d\n",
}


@pytest.mark.parametrize("text", TRICKY.values(), ids=TRICKY.keys())
def test_tricky(text: str) -> None:
    _same(text)


def test_aliases_keep_identity() -> None:
    [doc] = load_all(TRICKY["anchors"])
    assert doc["a"] is doc["b"]


def test_recursive_alias_as_pyyaml() -> None:
    [doc] = load_all("a: &r [*r]\n")
    assert doc["a"][0] is doc["a"]


@pytest.mark.parametrize("path", sorted(EXAMPLES.rglob("*.yaml")), ids=lambda p: p.name)
def test_every_example(path: Any) -> None:
    _same(path.read_text())


JSONISH = st.recursive(
    st.one_of(
        st.none(), st.booleans(), st.integers(), st.floats(allow_nan=False), st.text(max_size=10), st.dates()
    ),
    lambda inner: st.one_of(
        st.lists(inner, max_size=4),
        st.dictionaries(st.one_of(st.text(max_size=6), st.integers()), inner, max_size=4),
    ),
    max_leaves=20,
)


@settings(max_examples=200, deadline=None)
@given(st.lists(JSONISH, max_size=3), st.booleans())
def test_dumped_data(docs: list[Any], flow: bool) -> None:
    _same(yaml.safe_dump_all(docs, default_flow_style=flow))


@settings(max_examples=300, deadline=None)
@given(st.text(alphabet=st.sampled_from(list("{}[]:,-?&*!|>'\"#%@`~<=. \n\tabyYn019xe_")), max_size=60))
def test_yaml_ish_text(text: str) -> None:
    _same(text)


def test_documents_come_one_at_a_time_before_an_error() -> None:
    docs = iter_all("a: 1\n---\nb: {\n")
    assert next(docs) == {"a": 1}
    with pytest.raises(yaml.YAMLError):
        next(docs)
