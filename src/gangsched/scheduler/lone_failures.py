"""A lone pod's failed cycle, kept while what decided it stands: the pods of a queue behind a full cluster
fail one after another on the same snapshot, and each would run the same Filter over every node and the same
PostFilter dry run to the same messages.

    kept = memo.get(state, key)      # None: run the cycle (and PostFilter), then
    memo.keep(state, key, result, post)

The answer of a lone pod's cycle and PostFilter is a function of inputs the key and the state name:

- the key: the pod's equivalence signature (what every filter and score reads of its spec: Evaluator
  classes are keyed on it), its priority and preemption policy (PostFilter's eligibility and victims),
  and the nodes its cycle may use (`allowed`: backfill's mask, None for all);
- the state: the Evaluator (a new one for every change of nodes or namespaces), the snapshot's `version`
  (every pod placed or removed, nomination and resource row gives a new one; an undone trial gives the old
  one back, with the same counts), and the scheduler's count of changes to objects that are not pods
  (PodGroups, whose priorities PostFilter's victims take; PriorityClasses, budgets, volumes: anything).

Only answers that no other input could change are kept (`keepable`, decided by the caller): the pod has no
nomination and no claims, reads no other pods' labels (no pods-stage plugin applies), nothing is nominated
anywhere, nothing of lower priority runs (PostFilter found nothing to evict, drew nothing), and PostFilter
wrote nothing. Then the kept answer is exactly what the cycle would compute again; a hit gives the Decision
the full cycle would. Contract: one instance per Scheduler; not thread-safe (neither is the Scheduler).
"""

from __future__ import annotations

from collections.abc import Callable, Hashable
from typing import TYPE_CHECKING, Any

from msgspec import Struct

from .cycle import UNSCHEDULABLE, GroupResult
from .podinfo import PodKey

if TYPE_CHECKING:
    from .postfilter import PostFilterResult

__all__ = ["KeptFailure", "LoneFailures"]


class KeptFailure(Struct, frozen=True):
    """What a lone pod's failed cycle and its PostFilter produced: the result's status (code, message, the
    message as the cycle left it, wrapped) and the pod's own message, PostFilter's reasons appended."""

    message: str
    cycle_message: str
    wrapped: bool
    failure: str
    post_type: Callable[[], PostFilterResult]  # PostFilter's (empty) answer, made afresh for each hit

    def result(self, key: PodKey) -> GroupResult:
        """The cycle's result as the cycle and PostFilter would leave it for the pod `key`."""
        return GroupResult(
            UNSCHEDULABLE,
            self.message,
            failures={key: self.failure},
            cycle_message=self.cycle_message,
            wrapped=self.wrapped,
        )


class LoneFailures:
    """Failed lone-pod cycles by key, for one state at a time (module docstring)."""

    def __init__(self) -> None:
        self._state: tuple[Any, ...] | None = None
        self._kept: dict[Hashable, KeptFailure] = {}
        self.hits = 0  # cycles answered from a kept failure (for profiles; nothing depends on it)

    def get(self, state: tuple[Any, ...], key: Hashable) -> KeptFailure | None:
        if not self._at(state):
            return None
        kept = self._kept.get(key)
        if kept is not None:
            self.hits += 1
        return kept

    def keep(
        self, state: tuple[Any, ...], key: Hashable, result: GroupResult, post: PostFilterResult
    ) -> None:
        """Keep a lone pod's failed cycle (`result` after PostFilter, `post` its answer) when PostFilter
        decided nothing: no write, no wait, no retry. The caller vouches for the rest (module docstring)."""
        if result.code != UNSCHEDULABLE or len(result.failures) != 1:
            return
        if post.decision or post.waiting or post.retry:
            return
        (failure,) = result.failures.values()
        self._at(state)
        self._kept[key] = KeptFailure(
            result.message, result.cycle_message, result.wrapped, failure, type(post)
        )

    def _at(self, state: tuple[Any, ...]) -> bool:
        """Whether `state` is the one the kept failures belong to; if not, it becomes it, with none kept."""
        if state == self._state:
            return True
        self._state = state
        self._kept.clear()
        return False
