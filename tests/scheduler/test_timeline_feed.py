"""Timeline.at_each: many actions scheduled as `at` would schedule them one by one (same times, priorities and
order, among themselves and with every other event), though only the earliest not fired is in the heap."""

from __future__ import annotations

from collections.abc import Callable

from gangsched.scheduler import Timeline

from .builders import build


def _timeline() -> Timeline:
    store, scheduler = build([])
    return Timeline(store, scheduler)


def _note(fired: list[str], label: str, then: Callable[[], None] | None = None) -> Callable[[], None]:
    def action() -> None:
        fired.append(label)
        if then is not None:
            then()

    return action


def test_fed_actions_fire_in_the_order_their_at_calls_would_give() -> None:
    """By hand: events sort by (time, priority, order scheduled). `b` and `c` are fed at t=5 with
    priority 1 after `early` (t=5, priority 1, scheduled first) and before `late` (same, scheduled after);
    `zero` (t=5, priority 0) comes before all of them; `d`, fed for t=-3 while the clock reads 0, fires
    at 0, before `a` at 1."""
    fired: list[str] = []
    timeline = _timeline()
    timeline.at(5.0, _note(fired, "early"), priority=1)
    timeline.at_each(
        [
            (5.0, _note(fired, "b")),
            (1.0, _note(fired, "a")),
            (5.0, _note(fired, "c")),
            (-3.0, _note(fired, "d")),
        ],
        priority=1,
    )
    timeline.at(5.0, _note(fired, "late"), priority=1)
    timeline.at(5.0, _note(fired, "zero"), priority=0)
    timeline.run()
    assert fired == ["d", "a", "zero", "early", "b", "c", "late"]


def test_an_event_scheduled_while_running_at_a_fed_time_comes_after_the_fed_ones() -> None:
    """`a` (fed, t=2) schedules `x` at t=4; `b` was fed for t=4 at the start, so it was scheduled first."""
    fired: list[str] = []
    timeline = _timeline()
    timeline.at_each(
        [
            (2.0, _note(fired, "a", lambda: timeline.at(4.0, _note(fired, "x"), priority=1))),
            (4.0, _note(fired, "b")),
        ],
        priority=1,
    )
    timeline.run()
    assert fired == ["a", "b", "x"]


def test_the_same_order_as_one_at_call_each() -> None:
    times = [7.0, 3.0, 3.0, 0.0, 9.5, 3.0, 7.0, 1.0] * 5

    def run(feed: bool) -> list[str]:
        fired: list[str] = []
        timeline = _timeline()
        timeline.at(3.0, _note(fired, "before"), priority=1)
        actions = [(t, _note(fired, f"{i}")) for i, t in enumerate(times)]
        if feed:
            timeline.at_each(actions, priority=1)
        else:
            for t, action in actions:
                timeline.at(t, action, priority=1)
        timeline.at(3.0, _note(fired, "after"), priority=1)
        timeline.run()
        return fired

    assert run(feed=True) == run(feed=False)
    assert len(run(feed=True)) == len(times) + 2
