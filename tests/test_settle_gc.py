"""`settle` (what `gangsched schedule` runs) pauses the cyclic GC for its run and leaves it as it found it;
what the run made is frozen out of the collector's reach (schedule.py)."""

from __future__ import annotations

import gc
from collections.abc import Iterator
from pathlib import Path

import pytest

from gangsched.api.gates import FeatureGates
from gangsched.builder.command import expanded_inputs
from gangsched.schedule import settle
from gangsched.scheduler import Scheduler

EIGHT_GPU = Path(__file__).parent.parent / "examples" / "eight-gpu" / "eight-gpu.yaml"


@pytest.fixture
def gc_state() -> Iterator[None]:
    running = gc.isenabled()
    yield
    gc.unfreeze()  # frozen objects return to the oldest generation: collectable again for the next tests
    if running:
        gc.enable()
    else:
        gc.disable()


@pytest.mark.parametrize("running", [True, False], ids=["enabled", "disabled"])
def test_settle_pauses_the_collector_and_restores_it(
    running: bool, gc_state: None, monkeypatch: pytest.MonkeyPatch
) -> None:
    objects, problems = expanded_inputs([str(EIGHT_GPU)], FeatureGates())
    assert problems == []
    seen: list[bool] = []
    init = Scheduler.__init__

    def recording_init(self: Scheduler, *args: object, **kwargs: object) -> None:
        seen.append(gc.isenabled())  # while the run builds the scheduler
        init(self, *args, **kwargs)  # type: ignore[arg-type]

    monkeypatch.setattr(Scheduler, "__init__", recording_init)
    (gc.enable if running else gc.disable)()
    settled = settle(objects, FeatureGates())
    assert seen == [False]
    assert gc.isenabled() is running
    assert all(o is not settled.store for o in gc.get_objects())  # frozen: in no generation the GC walks
