"""Loading: directories (recursive), stdin, List kinds, JSON, multi-document YAML; bad input as problems."""

from __future__ import annotations

import json
import os
from pathlib import Path, PurePosixPath

import pytest
from api_helpers import run_validate
from hypothesis import given
from hypothesis import strategies as st

from gangsched.api import load_paths
from gangsched.api.loader import pathlib_form

POD = "apiVersion: v1\nkind: Pod\nmetadata: {name: %s}\nspec: {containers: [{name: c, image: x}]}\n"


def test_directory_is_read_recursively_in_sorted_order(tmp_path: Path) -> None:
    (tmp_path / "b").mkdir()
    (tmp_path / "b" / "deep").mkdir()
    (tmp_path / "b" / "deep" / "z.yml").write_text(POD % "z")
    (tmp_path / "a.yaml").write_text(POD % "a")
    (tmp_path / "b" / "m.json").write_text(
        json.dumps({"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "m"}})
    )
    (tmp_path / "notes.txt").write_text("not a manifest")
    result = load_paths([str(tmp_path)])
    assert result.problems == []
    assert [i.obj.metadata.name for i in result.objects] == [
        "a",
        "z",
        "m",
    ]  # b/deep/z.yml sorts before b/m.json
    assert [i.order for i in result.objects] == [0, 1, 2]


def test_multi_document_yaml_keeps_order_and_skips_empty_documents(tmp_path: Path) -> None:
    f = tmp_path / "pods.yaml"
    f.write_text("---\n" + POD % "p1" + "---\n---\n" + POD % "p2")
    result = load_paths([str(f)])
    assert [i.obj.metadata.name for i in result.objects] == ["p1", "p2"]


def test_list_kinds_are_flattened(tmp_path: Path) -> None:
    doc = {
        "apiVersion": "v1",
        "kind": "List",
        "items": [
            {"apiVersion": "v1", "kind": "Namespace", "metadata": {"name": "a"}},
            {
                "apiVersion": "v1",
                "kind": "PodList",
                "items": [{"apiVersion": "v1", "kind": "Node", "metadata": {"name": "n"}}],
            },
        ],
    }
    f = tmp_path / "list.json"
    f.write_text(json.dumps(doc))
    result = load_paths([str(f)])
    assert [(i.info.kind, i.obj.metadata.name) for i in result.objects] == [("Namespace", "a"), ("Node", "n")]


def test_stdin(in_root: Path) -> None:
    result = run_validate("-f", "-", stdin=POD % "from-stdin")
    assert result.exit_code == 0
    assert "1 objects valid" in result.stderr


def test_stdin_problem_names_stdin() -> None:
    result = run_validate("-f", "-", stdin=POD % "Bad_Name")
    assert result.exit_code == 1
    assert result.stdout.startswith('-: Pod default/Bad_Name: metadata.name: Invalid value: "Bad_Name": ')


def test_unknown_kind_is_an_error_not_a_drop(tmp_path: Path) -> None:
    f = tmp_path / "d.yaml"
    f.write_text("apiVersion: apps/v1\nkind: Deployment\nmetadata: {name: web}\n")
    result = load_paths([str(f)])
    assert result.objects == []
    [problem] = result.problems
    assert str(problem).startswith(
        f'{f}: Deployment web: kind: Unsupported value: "Deployment": supported values: '
    )


def test_yaml_syntax_error_names_file_and_line(tmp_path: Path) -> None:
    f = tmp_path / "broken.yaml"
    f.write_text(POD % "ok" + "---\napiVersion: v1\nkind: Pod\nmetadata: {name: [unclosed\n")
    result = load_paths([str(f)])
    [problem] = result.problems
    assert problem.file == str(f)
    assert (
        "YAML syntax error at line 9, column 1"
    )  # where PyYAML finds the flow list unclosed in str(problem.error)
    assert result.objects == []  # nothing half-read from a broken file


def test_json_syntax_error_names_line(tmp_path: Path) -> None:
    f = tmp_path / "broken.json"
    f.write_text('{\n  "kind": "Pod",\n  "apiVersion": v1\n}\n')
    [problem] = load_paths([str(f)]).problems
    assert str(problem.error) == "JSON syntax error at line 3: Expecting value"


def test_missing_path_and_empty_directory(tmp_path: Path) -> None:
    result = load_paths([str(tmp_path / "nope.yaml"), str(tmp_path)])
    assert [str(p.error) for p in result.problems] == [
        "no such file or directory",
        "no *.yaml, *.yml or *.json files in directory",
    ]


def test_wrong_field_type_is_a_field_error(tmp_path: Path) -> None:
    f = tmp_path / "pg.yaml"
    f.write_text(
        "apiVersion: scheduling.k8s.io/v1beta1\nkind: PodGroup\n"
        "metadata: {name: pg}\nspec: {schedulingPolicy: []}\n"
    )
    [problem] = load_paths([str(f)]).problems
    assert str(problem.error).startswith("spec.schedulingPolicy: Invalid value: []")


def test_binary_input_is_refused_cleanly(tmp_path: Path) -> None:
    f = tmp_path / "junk.yaml"
    f.write_bytes(b"\x00\xff\xfe binary")
    [problem] = load_paths([str(f)]).problems
    assert str(problem.error).startswith("cannot read")


@given(st.text(alphabet="/.ab", max_size=12))
def test_a_path_is_put_in_pathlib_normal_form(path: str) -> None:
    """The loader stats an input path as pathlib.Path would (it no longer imports pathlib for a file): in
    the normal form PurePosixPath gives it."""
    assert pathlib_form(path) == str(PurePosixPath(path))


def test_inputs_are_told_apart_as_pathlib_tells_them(tmp_path: Path, monkeypatch: pytest.MonkeyPatch) -> None:
    """A file named with a trailing slash or `/.` is a file to pathlib (then the system refuses to open
    it); a FIFO is neither a file nor a directory; a path through a file, or with a null character, is
    missing; an empty path is the working directory."""
    pod = tmp_path / "p.yaml"
    pod.write_text(POD % "p")
    fifo = tmp_path / "fifo"
    os.mkfifo(fifo)
    result = load_paths([f"{pod}/", f"{pod}/.", str(fifo), f"{pod}/x.yaml", "nul\0l"])
    assert result.objects == []
    assert [(p.file, str(p.error)) for p in result.problems] == [
        (f"{pod}/", "cannot read: Not a directory"),
        (f"{pod}/.", "cannot read: Not a directory"),
        (str(fifo), "not a regular file or directory"),
        (f"{pod}/x.yaml", "no such file or directory"),
        ("nul\0l", "no such file or directory"),
    ]
    monkeypatch.chdir(tmp_path)
    assert [i.obj.metadata.name for i in load_paths([""]).objects] == ["p"]
