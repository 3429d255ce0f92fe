"""Partitionable devices' shared counters (DRAPartitionableDevices, beta and on by default in v1.37), as the
structured allocator kube-scheduler v1.37.2 runs with the default gates enforces them
(k8s.io/dynamic-resource-allocation/structured/internal/incubating: pools_incubating.go buildPool,
getAndValidateCounterSets, validateDeviceCounterConsumption; allocator_incubating.go checkAvailableCounters,
deallocateCountersForDevice).

A pool's slices with `sharedCounters` declare counter sets (a GPU's memory, its compute slices); a device's
`consumesCounters` says how much of which counters it takes while allocated, so that overlapping partitions
of one GPU (MIG profiles) are never handed out together beyond what the GPU has. A device is allocatable only
while, for every counter of every counter set of its pool, the counter's value covers what the pool's
allocated devices consume (those held by claims, and those tentatively allocated earlier in this cycle:
upstream's allocated state with its in-flight claims) plus what the devices being allocated in this search
consume, this one included.

Why upstream's shapes: the check covers every counter of the pool, not only those the device consumes, so a
pool already over-consumed (a slice shrank its counters) allocates no counter-consuming device at all; and a
device allocated with admin access consumes counters while its search runs, but not once allocated (its
claim holds no device: allocateddevices.go).
"""

from __future__ import annotations

from collections.abc import Container, Iterable
from fractions import Fraction
from typing import Any

from ..api.quantity import QuantityError, parse_quantity

__all__ = ["Consumption", "CounterLedger", "consumption", "counter_sets"]

# What one device consumes: ((counter set, counter), amount) pairs.
Consumption = tuple[tuple[tuple[str, str], Fraction], ...]
CounterKey = tuple[str, str]


def _value(counter: Any) -> Fraction:
    raw = counter.get("value") if isinstance(counter, dict) else getattr(counter, "value", None)
    try:
        return parse_quantity(raw if raw is not None else 0)
    except QuantityError:
        return Fraction(0)


def consumption(device: Any) -> Consumption:
    """The device's `consumesCounters` as ((counter set, counter), amount) pairs."""
    return tuple(
        ((use.counterSet, name), _value(counter))
        for use in device.consumesCounters or ()
        for name, counter in (use.counters or {}).items()
    )


def counter_sets(
    slices: Iterable[Any], devices: Iterable[Any]
) -> tuple[dict[CounterKey, Fraction], str | None]:
    """The pool's counters ((set, counter) -> value) from its slices' `sharedCounters`, and the reason the
    pool is invalid, if it is: a counter set declared twice, or a device consuming a counter set or counter
    the pool does not declare (upstream allocates no device of an invalid pool)."""
    counters: dict[CounterKey, Fraction] = {}
    declared: dict[str, set[str]] = {}
    for sl in slices:
        for counter_set in sl.spec.sharedCounters or ():
            if counter_set.name in declared:
                return {}, f"duplicate counter set name {counter_set.name}"
            declared[counter_set.name] = set()
            for name, counter in (counter_set.counters or {}).items():
                declared[counter_set.name].add(name)
                counters[(counter_set.name, name)] = _value(counter)
    for device in devices:
        for use in device.consumesCounters or ():
            if use.counterSet not in declared:
                return {}, f"counter set {use.counterSet} not found"
            for name in use.counters or {}:
                if name not in declared[use.counterSet]:
                    return {}, f"counter {name} not found in counter set {use.counterSet}"
    return counters, None


class CounterLedger:
    """The counters left in each pool during one allocation search: the pool's counters less what its
    allocated devices (`in_use`) consume, computed when a device of the pool is first tried; then `take`
    and `give_back` as the search allocates and backtracks."""

    def __init__(self, in_use: Container[Any]) -> None:
        self.in_use = in_use
        self._left: dict[tuple[str, str], dict[CounterKey, Fraction]] = {}

    def _left_in(self, pool: Any) -> dict[CounterKey, Fraction]:
        key = (pool.driver, pool.name)
        left = self._left.get(key)
        if left is None:
            left = self._left[key] = dict(pool.counters)
            for device_id, used in pool.consumers.items():
                if device_id in self.in_use:
                    for counter, amount in used:
                        if counter in left:
                            left[counter] -= amount
        return left

    def take(self, pool: Any, used: Consumption) -> bool:
        """Count `used` against the pool when every counter of the pool still covers what is consumed;
        else change nothing and return False."""
        left = self._left_in(pool)
        for counter, amount in used:
            left[counter] -= amount
        if all(value >= 0 for value in left.values()):
            return True
        self.give_back(pool, used)
        return False

    def give_back(self, pool: Any, used: Consumption) -> None:
        left = self._left_in(pool)
        for counter, amount in used:
            left[counter] += amount
