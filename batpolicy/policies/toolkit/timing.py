"""One decision timer for every policy, read on the policy's injected clock.

A policy that reports how long its decisions (or a part of them) take keeps one
:class:`DecisionTimer` per measured part and reads the time from ``self.clock`` (the
:class:`~batpolicy.scheduler.clock.Clock` its driver or a test injects: policies never
import :mod:`time`). :meth:`DecisionTimer.summary` gives the one naming every policy's
``stats()`` uses, flat keys under a name ``<part>_time_ms`` (docs/metrics.md)::

    "decision_time_ms.count": 12, "decision_time_ms.p50": 0.1, "decision_time_ms.p95": 0.4,
    "decision_time_ms.p99": 0.9, "decision_time_ms.max": 1.2

Milliseconds of wall time, nearest-rank percentiles; all 0 when nothing was timed.
"""

from __future__ import annotations

from array import array

from batpolicy.scheduler.contract import percentile

__all__ = ["DecisionTimer"]


class DecisionTimer:
    """Wall durations of one measured part of a policy's decisions.

    >>> from batpolicy.scheduler.clock import MockClock
    >>> clock, timer = MockClock(step=0.002), DecisionTimer()
    >>> began = clock()
    >>> timer.add(clock() - began)
    >>> timer.summary("decision_time_ms")  # doctest: +NORMALIZE_WHITESPACE
    {'decision_time_ms.count': 1, 'decision_time_ms.p50': 2.0, 'decision_time_ms.p95': 2.0,
     'decision_time_ms.p99': 2.0, 'decision_time_ms.max': 2.0}
    >>> DecisionTimer().summary("fill_time_ms")["fill_time_ms.p99"]
    0.0
    """

    __slots__ = ("_seconds",)

    def __init__(self) -> None:
        self._seconds = array("d")

    def add(self, seconds: float) -> None:
        """Record one duration in seconds (two readings of the injected clock apart)."""
        self._seconds.append(seconds)

    def __len__(self) -> int:
        """How many durations were recorded."""
        return len(self._seconds)

    def summary(self, name: str) -> dict[str, float | int]:
        """``name.count`` and the ``name.p50``, ``.p95``, ``.p99``, ``.max`` milliseconds."""
        ordered = sorted(self._seconds)
        return {f"{name}.count": len(ordered),
                f"{name}.p50": 1e3 * percentile(ordered, 50),
                f"{name}.p95": 1e3 * percentile(ordered, 95),
                f"{name}.p99": 1e3 * percentile(ordered, 99),
                f"{name}.max": 1e3 * (ordered[-1] if ordered else 0.0)}
