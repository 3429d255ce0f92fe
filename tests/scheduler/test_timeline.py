"""The virtual clock: events and cycles interleaved in time order, run(until), and run_until_stable as the
no-event case."""

from __future__ import annotations

import datetime as dt
from collections.abc import Callable
from typing import Any

from gangsched.api.gates import FeatureGates
from gangsched.scheduler import Timeline, run_until_stable
from gangsched.store import Store
from gangsched.store.store import EPOCH

from ..scenarios.harness import load_objects
from .builders import build, gang, node, node_of, pod


def _add(store: Store, doc: dict[str, Any]) -> Callable[[], None]:
    def action() -> None:
        store.add_all(load_objects([doc], "test", FeatureGates()))

    return action


def _scheduled_at(store: Store, name: str) -> float:
    pod = store.get("Pod", ("default", name))
    cond = next(c for c in pod.status.conditions if c.type == "PodScheduled")
    return (cond.lastTransitionTime - EPOCH) / dt.timedelta(seconds=1)


def test_a_pod_arriving_at_t_is_bound_at_t_and_conditions_carry_the_virtual_time() -> None:
    store, scheduler = build([node("n", "2")])
    timeline = Timeline(store, scheduler)
    end = timeline.run(
        until=100.0, events=[(30.0, _add(store, pod("late"))), (10.0, _add(store, pod("early")))]
    )
    assert end == 100.0
    assert node_of(store, "early") == node_of(store, "late") == "n"
    assert _scheduled_at(store, "early") == 10.0
    assert _scheduled_at(store, "late") == 30.0


def test_events_at_until_do_not_fire_and_a_later_run_continues() -> None:
    store, scheduler = build([node("n", "2")])
    timeline = Timeline(store, scheduler)
    timeline.run(until=50.0, events=[(50.0, _add(store, pod("p")))])
    assert store.get("Pod", ("default", "p")) is None
    timeline.run(until=51.0)
    assert node_of(store, "p") == "n"


def test_events_at_one_instant_fire_before_the_cycles_of_that_instant() -> None:
    """A 2-pod gang whose second pod arrives at the same instant is never tried half-present."""
    store, scheduler = build([node("n", "2"), *gang("g", 2)[:2]])
    timeline = Timeline(store, scheduler)
    timeline.at(0.0, _add(store, gang("g", 2)[2]))
    timeline.run(until=1.0)
    assert node_of(store, "g-0") == node_of(store, "g-1") == "n"
    assert scheduler.cycles == 1


def test_run_until_stable_waits_backoffs_in_virtual_time() -> None:
    """A gang that failed once is retried after its backoff (1 s after one attempt) when a bound pod goes."""
    store, scheduler = build([node("n", "2"), pod("blocker", cpu="2", node="n"), *gang("g", 2)])
    assert run_until_stable(store, scheduler) == 0.0
    store.delete("Pod", ("default", "blocker"))
    assert run_until_stable(store, scheduler) == 1.0
    assert node_of(store, "g-0") == "n"
