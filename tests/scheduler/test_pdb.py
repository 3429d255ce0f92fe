"""PodDisruptionBudget arithmetic as the disruption controller does it, and the victim split of preemption."""

from __future__ import annotations

from dataclasses import dataclass
from typing import Any

import pytest
from lightkube.models import core_v1, meta_v1, policy_v1

from gangsched.scheduler.pdb import budgets, disruptions_allowed, selector_matches, split_by_violation


def pod(name: str, labels: dict[str, str], node: str | None = "n1", phase: str | None = None) -> Any:
    return core_v1.Pod(
        metadata=meta_v1.ObjectMeta(name=name, namespace="default", labels=labels),
        spec=core_v1.PodSpec(containers=[core_v1.Container(name="c")], nodeName=node),
        status=core_v1.PodStatus(phase=phase),
    )


def pdb(min_available: int | str | None = None, max_unavailable: int | str | None = None) -> Any:
    return policy_v1.PodDisruptionBudget(
        metadata=meta_v1.ObjectMeta(name="b", namespace="default"),
        spec=policy_v1.PodDisruptionBudgetSpec(
            minAvailable=min_available,
            maxUnavailable=max_unavailable,
            selector=meta_v1.LabelSelector(matchLabels={"app": "a"}),
        ),
    )


def no_spec() -> Any:
    return policy_v1.PodDisruptionBudget(metadata=meta_v1.ObjectMeta(name="b", namespace="default"))


FOUR_RUNNING = [pod(f"p{i}", {"app": "a"}) for i in range(4)]
FIFTEEN_RUNNING = [pod(f"p{i}", {"app": "a"}) for i in range(15)]
THREE_RUNNING_ONE_PENDING = [*FOUR_RUNNING[:3], pod("p3", {"app": "a"}, node=None)]


@pytest.mark.parametrize(
    ("budget", "pods", "allowed"),
    [
        (pdb(min_available=2), FOUR_RUNNING, 2),
        (pdb(min_available=4), FOUR_RUNNING, 0),
        (pdb(min_available=5), FOUR_RUNNING, 0),
        (pdb(min_available="50%"), FOUR_RUNNING, 2),
        (pdb(min_available="30%"), FOUR_RUNNING, 2),  # ceil(1.2) = 2 must stay
        (pdb(max_unavailable=1), FOUR_RUNNING, 1),
        (pdb(max_unavailable="30%"), FOUR_RUNNING, 2),  # ceil(1.2) = 2 may go
        (pdb(max_unavailable=1), THREE_RUNNING_ONE_PENDING, 0),  # the pending one is already unavailable
        (pdb(min_available=2), [*FOUR_RUNNING[:2], pod("x", {"app": "a"}, phase="Succeeded")], 0),
        (pdb(min_available=1), [pod("other", {"app": "b"})], 0),
        (pdb(min_available="67%"), FIFTEEN_RUNNING, 4),  # ceil(10.05) = 11 of 15 must stay
        (pdb(max_unavailable="100%"), FOUR_RUNNING, 4),  # desiredHealthy max(0, 4 - 4) = 0
        (pdb(max_unavailable=6), FOUR_RUNNING, 4),  # desiredHealthy clamps at 0, not below
        (pdb(), FOUR_RUNNING, 0),  # neither field: desiredHealthy 0 but expectedCount 0 -> 0
        (no_spec(), FOUR_RUNNING, 0),
        (pdb(min_available="3"), FOUR_RUNNING, 0),  # a string must be a percentage: the sync fails -> 0
        (pdb(max_unavailable="x%"), FOUR_RUNNING, 0),
        (pdb(max_unavailable="1"), FOUR_RUNNING, 0),
    ],
    ids=[
        "min-int",
        "min-all",
        "min-above-count",
        "min-percent",
        "min-percent-rounds-up",
        "max-int",
        "max-percent-rounds-up",
        "pending-not-healthy",
        "finished-not-healthy",
        "selector-misses",
        "min-percent-rounds-up-above-an-integer",
        "max-percent-all",
        "max-above-count",
        "neither-field",
        "no-spec",
        "min-string-not-percent",
        "max-percent-malformed",
        "max-string-not-percent",
    ],
)
def test_disruptions_allowed(budget: Any, pods: list[Any], allowed: int) -> None:
    assert disruptions_allowed(budget, pods) == allowed


@pytest.mark.parametrize(
    ("selector", "labels", "matches"),
    [
        (meta_v1.LabelSelector(), {"app": "a"}, False),
        (meta_v1.LabelSelector(matchLabels={"app": "a"}), {"app": "a", "x": "y"}, True),
        (meta_v1.LabelSelector(matchLabels={"app": "a"}), {"app": "b"}, False),
        (
            meta_v1.LabelSelector(
                matchExpressions=[
                    meta_v1.LabelSelectorRequirement(key="tier", operator="In", values=["x", "y"])
                ]
            ),
            {"tier": "y"},
            True,
        ),
        (
            meta_v1.LabelSelector(
                matchExpressions=[
                    meta_v1.LabelSelectorRequirement(key="tier", operator="NotIn", values=["x"])
                ]
            ),
            {},
            True,
        ),
        (
            meta_v1.LabelSelector(
                matchExpressions=[meta_v1.LabelSelectorRequirement(key="tier", operator="Exists")]
            ),
            {"app": "a"},
            False,
        ),
        (
            meta_v1.LabelSelector(
                matchExpressions=[meta_v1.LabelSelectorRequirement(key="tier", operator="DoesNotExist")]
            ),
            {"app": "a"},
            True,
        ),
    ],
    ids=[
        "empty-selects-nothing",
        "labels-subset",
        "label-differs",
        "in",
        "notin-absent",
        "exists",
        "doesnotexist",
    ],
)
def test_selector_matches(selector: Any, labels: dict[str, str], matches: bool) -> None:
    assert selector_matches(selector, labels) is matches


@dataclass
class Unit:
    pod_objects: list[Any]


def test_split_spends_budgets_in_order_and_counts_violating_pods() -> None:
    pods = [pod(f"p{i}", {"app": "a"}) for i in range(3)] + [pod("free", {})]
    (budget,) = budgets([pdb(min_available=2)], pods)  # 3 healthy, 1 disruption allowed
    first, pair, unlabelled = Unit([pods[0]]), Unit([pods[1], pods[2]]), Unit([pods[3]])
    violating, fine = split_by_violation([first, pair, unlabelled], [budget])
    assert violating == [(pair, 2)]
    assert fine == [first, unlabelled]


def test_already_disrupted_pods_do_not_spend_the_budget() -> None:
    pods = [pod(f"p{i}", {"app": "a"}) for i in range(2)]
    budget_obj = pdb(min_available=2)
    budget_obj.status = policy_v1.PodDisruptionBudgetStatus(
        currentHealthy=2, desiredHealthy=2, disruptionsAllowed=0, expectedPods=2, disruptedPods={"p0": "x"}
    )
    violating, fine = split_by_violation([Unit([pods[0]]), Unit([pods[1]])], budgets([budget_obj], pods))
    assert [u.pod_objects[0].metadata.name for u in fine] == ["p0"]
    assert [(u.pod_objects[0].metadata.name, n) for u, n in violating] == [("p1", 1)]


def test_an_unlabelled_pod_does_not_end_the_units_check() -> None:
    """filterPodsWithPDBViolation skips a pod without labels and goes on with the unit's other pods."""
    pods = [pod("bare", {}), pod("p0", {"app": "a"})]
    (budget,) = budgets([pdb(min_available=1)], pods)  # 1 healthy, 1 desired: nothing may go
    unit = Unit([pods[0], pods[1]])
    assert split_by_violation([unit], [budget]) == ([(unit, 1)], [])


def test_every_budget_is_checked_after_one_that_does_not_select_the_pod() -> None:
    """A budget of another namespace or selector is skipped; the next budget still counts the pod."""
    pods = [pod("p0", {"app": "a"})]
    other = pdb(min_available=0)
    other.metadata.namespace = "elsewhere"
    other_selector = pdb(min_available=0)
    other_selector.spec.selector = meta_v1.LabelSelector(matchLabels={"app": "b"})
    tight = budgets([other, other_selector, pdb(min_available=1)], pods)
    unit = Unit(pods)
    assert split_by_violation([unit], tight) == ([(unit, 1)], [])


def test_a_pod_already_disrupted_for_one_budget_still_spends_the_next() -> None:
    pods = [pod("p0", {"app": "a"}), pod("p1", {"app": "a"})]
    loose, tight = pdb(min_available=0), pdb(min_available=2)
    loose.status = policy_v1.PodDisruptionBudgetStatus(
        currentHealthy=2, desiredHealthy=0, disruptionsAllowed=2, expectedPods=2, disruptedPods={"p0": "x"}
    )
    unit = Unit([pods[0]])
    assert split_by_violation([unit], budgets([loose, tight], pods)) == ([(unit, 1)], [])


def test_a_budget_without_spec_selects_nothing_and_allows_nothing() -> None:
    (budget,) = budgets([no_spec()], FOUR_RUNNING)
    assert budget.selector is None and budget.allowed == 0
    unit = Unit([FOUR_RUNNING[0]])
    assert split_by_violation([unit], [budget]) == ([], [unit])
