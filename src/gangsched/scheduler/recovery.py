"""Recovery policies: what happens to a gang that loses members after admission. A Profile setting, so that
the simulator and live mode read the same one (`Profile(recovery=Recovery.parse("restart"))`), and the rules
below are the only copy of what each policy does: the simulator (sim/failures.py) and `gangsched run`
(live/recovery.py) supply the facts (members running before and after a loss, minCount, the time) and carry
out the answer.

- `wait` (upstream): the rest stay bound and wait for a replacement pod (the Job controller's) to be
  scheduled; progress since the last checkpoint is lost once the gang is below minCount.
- `restart`: the whole group is deleted and created again; it restarts from its last checkpoint.
- `continue`: the group goes on while at least minCount members run; below that, as `wait`.
- `release-after:T`: as `wait`, but after T seconds below minCount the rest are released and the whole
  group is queued again (it holds no GPUs while it cannot progress).
"""

from __future__ import annotations

from msgspec import Struct

__all__ = [
    "CONTINUE",
    "MEMBER",
    "RECOVERY_POLICIES",
    "RESTART",
    "STALL",
    "WAIT",
    "Recovery",
    "after_loss",
    "recovering_after",
    "release_at",
    "stalled",
]

RECOVERY_POLICIES = ("wait", "restart", "continue", "release-after")

# What a loss after admission leads to (after_loss):
MEMBER = "member"  # a basic group: only the lost member is replaced; the others are not affected
RESTART = "restart"  # the whole group is deleted and created again (from its last checkpoint)
CONTINUE = "continue"  # the group goes on with the members it has (at least minCount run)
STALL = "stall"  # the rest stay bound without progress until the lost members are replaced


class Recovery(Struct, frozen=True):
    policy: str = "wait"
    release_after_s: float = 0.0  # release-after only

    @classmethod
    def parse(cls, text: str) -> Recovery:
        """`wait`, `restart`, `continue` or `release-after:SECONDS`; ValueError otherwise."""
        name, _, arg = text.partition(":")
        if name in ("wait", "restart", "continue") and not arg:
            return cls(name)
        if name == "release-after":
            try:
                seconds = float(arg)
            except ValueError:
                seconds = -1.0
            if seconds >= 0:
                return cls(name, seconds)
        raise ValueError(
            f"invalid recovery policy {text!r}: expected wait, restart, continue or release-after:SECONDS"
        )

    @property
    def name(self) -> str:
        return f"release-after:{self.release_after_s:g}" if self.policy == "release-after" else self.policy


WAIT = Recovery()


def after_loss(recovery: Recovery, *, gang: bool, started: bool, running: int, min_count: int) -> str:
    """What `recovery` does when a member of a group is lost (failed, deleted, its node gone or not ready,
    or preempted), with `running` members still running afterwards. `gang`: progress needs minCount members
    (False for a basic group, whose members progress one by one); `started`: the group had made progress
    (live: had minCount members in place). Returns MEMBER, RESTART, CONTINUE or STALL."""
    if not gang:
        return MEMBER
    if recovery.policy == "restart" and started:
        return RESTART
    if recovery.policy == "continue" and running >= min_count:
        return CONTINUE
    return STALL  # wait, release-after (whose clock stalled() starts), continue below minCount


def stalled(*, running: int, min_count: int, recovering: int) -> bool:
    """A gang holds its members without progress: fewer than minCount run, or, after a STALL, fewer than the
    `recovering` members that ran before the loss (0: no loss being recovered from)."""
    return running < min_count or (recovering > 0 and running < recovering)


def recovering_after(*, running: int, recovering: int) -> int:
    """What is left of a STALL's `recovering` count once `running` members run: 0 when the replacements
    are all there (the group goes on from its checkpoint), else unchanged."""
    return 0 if recovering and running >= recovering else recovering


def release_at(recovery: Recovery, below_since: float) -> float | None:
    """When a gang stalled since `below_since` (and still holding members) releases them and is queued
    again whole: only under release-after, T seconds later; None under the other policies."""
    if recovery.policy != "release-after":
        return None
    return below_since + recovery.release_after_s
