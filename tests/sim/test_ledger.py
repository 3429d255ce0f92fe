"""GpuLedger's free and fragmented GPU-seconds on a few nodes, computed by hand: free GPUs are fragmented
while no waiting job's pods fit in them at once, node by node."""

from __future__ import annotations

import numpy as np

from gangsched.sim.metrics import GpuLedger


def test_free_room_is_fragmented_exactly_while_no_waiting_job_fits_in_it() -> None:
    ledger = GpuLedger(np.array([8.0, 8.0, 4.0]))
    ledger.waiting(None, (4.0, 2))  # a job waits for 2 pods of 4 GPUs at once
    ledger.take(0, 6.0)
    ledger.take(1, 6.0)  # free 2, 2, 4: one pod of 4 fits, 8 free GPUs are fragmented
    ledger.advance(10.0)
    ledger.give(1, 2.0)  # free 2, 4, 4: the job fits
    ledger.advance(20.0)
    ledger.node_down(2)  # free 2, 4, 0: one pod fits again, 6 fragmented
    ledger.advance(30.0)
    ledger.waiting(None, (1.0, 1))  # a 1-GPU job waits too: it fits, so nothing is fragmented
    ledger.advance(40.0)
    ledger.waiting((1.0, 1), None)
    ledger.node_up(2)  # free 2, 4, 4 again
    ledger.take(1, 4.0)  # free 2, 0, 4: 6 fragmented
    ledger.close(50.0)
    assert ledger.fragmented_total == 8 * 10 + 6 * 10 + 6 * 10
    assert ledger.free_total == 8 * 10 + 10 * 10 + 6 * 10 + 6 * 10 + 6 * 10
    assert [s[0] for s in ledger.samples] == [0.0, 10.0, 20.0, 30.0, 40.0, 50.0]
    assert ledger.samples[-1][-1] == 6.0
