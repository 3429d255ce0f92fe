"""Recovery policies: what happens to a gang that loses members after admission. A Profile setting, so that
the simulator and live mode read the same one (`Profile(recovery=Recovery.parse("restart"))`).

- `wait` (upstream): the rest stay bound and wait for a replacement pod (the Job controller's) to be
  scheduled; progress since the last checkpoint is lost once the gang is below minCount.
- `restart`: the whole group is deleted and created again; it restarts from its last checkpoint.
- `continue`: the group goes on while at least minCount members run; below that, as `wait`.
- `release-after:T`: as `wait`, but after T seconds below minCount the rest are released and the whole
  group is queued again (it holds no GPUs while it cannot progress).
"""

from __future__ import annotations

from dataclasses import dataclass

__all__ = ["RECOVERY_POLICIES", "WAIT", "Recovery"]

RECOVERY_POLICIES = ("wait", "restart", "continue", "release-after")


@dataclass(frozen=True, slots=True)
class Recovery:
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
