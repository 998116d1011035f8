"""Wall clocks, kept apart from simulated time (trio's ``Clock`` / ``MockClock`` idea).

Policies never import :mod:`time`: a policy that needs wall time (a time-bounded
search) receives a :class:`Clock` from its driver. Tests pass a :class:`MockClock` to make
time-bounded searches deterministic.
"""

from __future__ import annotations

import time
from typing import Protocol


class Clock(Protocol):
    """Something that tells elapsed wall seconds."""

    def __call__(self) -> float:
        """Current reading in seconds (monotonic)."""
        ...


class WallClock:
    """The process's monotonic high-resolution clock (``time.perf_counter``)."""

    __slots__ = ()

    def __call__(self) -> float:
        """Seconds from an arbitrary origin."""
        return time.perf_counter()


class MockClock:
    """A clock that advances by ``step`` seconds at every reading.

    >>> c = MockClock(step=0.5)
    >>> c(), c(), c()
    (0.0, 0.5, 1.0)
    """

    __slots__ = ("now", "step")

    def __init__(self, start: float = 0.0, step: float = 0.0) -> None:
        self.now = start
        self.step = step

    def __call__(self) -> float:
        """Current reading, then advance by ``step``."""
        reading = self.now
        self.now += self.step
        return reading
