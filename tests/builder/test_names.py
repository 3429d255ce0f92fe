"""Names are upstream's, bit for bit: the vectors come from workloadbuilder/names_test.go."""

from __future__ import annotations

import pytest

from gangsched.builder.names import (
    DNS1123_SUBDOMAIN_MAX_LENGTH,
    generate_pod_group_name,
    generate_workload_name,
    indexed_pod_generate_name,
    pod_name,
)


@pytest.mark.parametrize(
    ("owner", "uid", "want"),
    [("job", "uid-1", "job-647cf7d9"), ("", "uid-1", "647cf7d9")],
    ids=["with-owner", "empty-owner"],
)
def test_workload_name_matches_upstream(owner: str, uid: str, want: str) -> None:
    assert generate_workload_name(owner, uid) == want


@pytest.mark.parametrize(
    ("workload", "template", "want"),
    [("", "", "65bb57b6b5"), ("", "template", "template-5cbb944dc9"), ("workload", "", "workload-c5546b9dd")],
    ids=["both-empty", "no-workload", "no-template"],
)
def test_pod_group_name_matches_upstream(workload: str, template: str, want: str) -> None:
    assert generate_pod_group_name(workload, template) == want


def test_long_names_are_truncated_fairly() -> None:
    name = generate_pod_group_name("workload" * 40, "template")
    assert len(name) <= DNS1123_SUBDOMAIN_MAX_LENGTH
    assert "-template-" in name
    assert len(generate_workload_name("job" * 100, "uid-1")) <= DNS1123_SUBDOMAIN_MAX_LENGTH
    assert generate_workload_name("job" * 100, "uid-1") != generate_workload_name("job" * 100, "uid-2")


def test_indexed_generate_name_keeps_the_index_when_cut() -> None:
    assert indexed_pod_generate_name("train", 3) == "train-3-"
    cut = indexed_pod_generate_name("j" * 70, 12)
    assert cut.endswith("-12-") and len(cut) == 58


def test_pod_names_are_deterministic_and_distinct() -> None:
    names = [pod_name("train-", "uid", i) for i in range(200)]
    assert names == [pod_name("train-", "uid", i) for i in range(200)]
    assert len(set(names)) == 200
    assert all(n.startswith("train-") and len(n) == len("train-") + 5 for n in names)
