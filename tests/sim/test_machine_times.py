"""The simulator's machine-state times (schedule.csv's time_idle) against a direct count."""

from __future__ import annotations

import random

import pytest

from batpolicy.protocol.intervals import MachineSet
from batpolicy.simulator import records
from batpolicy.simulator.records import SimMachines


@pytest.mark.parametrize("fold_every", [1, 3, 4096])
def test_last_change_sum_is_each_machines_latest_change(monkeypatch: pytest.MonkeyPatch,
                                                        fold_every: int) -> None:
    """Batches of queued changes (folded latest first) give each machine its last time."""
    monkeypatch.setattr(records, "_FOLD_EVERY", fold_every)
    rng = random.Random(7)
    n = 40
    machines = SimMachines([f"m{i}" for i in range(n)], [1.0] * n)
    last = [0.0] * n
    now = 0.0
    for _ in range(300):
        now += rng.choice([0.0, 0.5, 3.0])  # equal times too: several changes per instant
        ids = rng.sample(range(n), rng.randint(1, 6))
        alloc = MachineSet(ids)
        if rng.random() < 0.1:
            machines.set_unavailable(alloc - machines.unavailable, now)
            machines.set_available(alloc & machines.unavailable, now + 1.0)
            changed = [(m, now + 1.0) for m in alloc]
            now += 1.0
        else:
            machines.occupy(alloc, now)
            machines.release(alloc, now, now)
            changed = [(m, now) for m in alloc]
        for m, at in changed:
            last[m] = at
        if rng.random() < 0.05:  # asked mid-run, as result() may be
            assert machines.last_change_sum() == pytest.approx(sum(last))
    assert machines.last_change_sum() == pytest.approx(sum(last))
    assert list(machines.last_change) == last
