"""CPython's cyclic garbage collector tuned for the drivers' long message loops.

Both drivers (:mod:`.daemon` and the simulator run by :mod:`batpolicy.simulator.run`) allocate a few
dozen small objects per Batsim message (events, decisions, interval lists), nearly all
acyclic and dead by the next message, while the long-lived heap (the workload, the jobs,
the policy's queues) only grows. With the default thresholds (700, 10, 10) the
collector runs a young collection every 700 net allocations and promotes whatever
happens to be alive at that moment, so older generations keep being rescanned for
objects reference counting frees anyway. :func:`steady_gc` freezes what exists when the
loop starts (:func:`gc.freeze`: never scanned again) and raises the young threshold,
so collections are rarer and see mostly dead objects; cycles are still collected.
Measured on whole KTH-SP2 (``batpolicy simulate --policy easy``): see the commit
introducing it and bench/results/startup_simulate.txt.

The young threshold is 500,000 net allocations. A whole trace's simulation keeps a few
objects per job alive for the whole run (jobs, records) and many more for a job's run
(its state, events and allocation); each young collection walks the survivors' references
across a heap of up to a gigabyte, and every tenth one walks them again in the middle
generation. At 50,000 the collector took 1.38 s of whole RICC-2010's ~46 s and 1.37 s of
CEA-Curie's ~35 s (time between ``gc.callbacks``' start and stop); at 500,000 it takes
0.82 and 0.90 s, because most middle-aged objects are dead before they are walked twice.
Peak memory is the same: the simulator and EASY/FCFS leave no cyclic garbage (a run
with the collector off ends with none to collect). The price is rarer, longer pauses
(tens of milliseconds every 500,000 allocations) and, for a policy that does make
cyclic garbage, up to that many objects more held before they are collected.
"""

from __future__ import annotations

import gc
from collections.abc import Iterator
from contextlib import contextmanager

__all__ = ["steady_gc"]

#: Young-generation threshold during a loop (CPython's default is 700).
YOUNG_THRESHOLD = 500_000


@contextmanager
def steady_gc() -> Iterator[None]:
    """Within the block: start-up objects frozen, young collections rarer; restored after.

    >>> import gc
    >>> before = gc.get_threshold()
    >>> with steady_gc():
    ...     gc.get_threshold()[0]
    500000
    >>> gc.get_threshold() == before
    True
    """
    previous = gc.get_threshold()
    gc.freeze()
    gc.set_threshold(YOUNG_THRESHOLD, *previous[1:])
    try:
        yield
    finally:
        gc.set_threshold(*previous)
        gc.unfreeze()
