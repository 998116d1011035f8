"""The messages inside one zero-latency instant: what Batsim's clock does between them.

On a zero-latency platform Batsim's messages still take one byte over the route's
bandwidth (``ipp.cpp``: 1-byte puts, ``ptask_L07``): 1e-12 s on a 1000 GBps loopback.
Batsim's clock moves by that much for every message its server receives, one at a time
(:mod:`.latency` models this in full on platforms with latencies). The zero-latency
simulator keeps instants exact, which is what the scheduler sees (Batsim writes times
with 6 decimals), with one exception: a job killed at the instant it starts. Batsim's
killer then finds a runtime of a few message times, not 0, so it writes execution_time
0.000000, finish = start, and a huge stretch (issue 17, case 1: batsched ``killer2``),
where a runtime of exactly 0 would become its 1e-5 s epsilon.

:class:`InstantMessages` counts the server's messages within the current instant (one
per decision and one SCHED_READY per reply), notes at which message each job started
and each kill was asked (a job's ``start_rank``, which the decision applier sets to
:meth:`~InstantMessages.rank` as it starts the job, and
:meth:`~InstantMessages.kill_asked`), and turns two counts into that runtime
(:meth:`~InstantMessages.stopped`).
"""

from __future__ import annotations

import logging

from batpolicy.platforms.model import Platform

__all__ = ["InstantMessages"]

log = logging.getLogger(__name__)


class InstantMessages:
    """Messages received by Batsim's server since the current instant began."""

    __slots__ = ("_platform", "_delay", "at", "count", "base", "_killed")

    def __init__(self, platform: Platform) -> None:
        self._platform = platform
        self._delay: tuple[float, float] | None = None
        self.at = -1.0
        self.count = 0
        self.base = 0.0
        self._killed: dict[str, int] = {}  # job id -> rank of its KILL_JOB

    def kill_asked(self, job_id: str, rank: int) -> None:
        """A KILL_JOB of ``job_id`` came at message ``rank`` of the instant. O(1)."""
        self._killed[job_id] = rank

    def stopped(self, job_id: str, now: float, killed: bool,
                start_rank: int | None) -> tuple[float, float] | None:
        """A job stops at ``now``, the instant it started: Batsim's clock at its start and kill.

        Only called for a job whose runtime is 0 (a job that ran longer needs nothing
        from here); ``start_rank`` is :meth:`rank` when the job started (None: it was not
        started by EXECUTE_JOB). None unless the job was ``killed`` (then its runtime is
        a few message times, see the module docstring). Forgets its kill. O(messages).
        """
        killed_at = self._killed.pop(job_id, None)
        if not killed or start_rank is None:
            return None
        return self.clocks(now, start_rank, start_rank if killed_at is None else killed_at)

    def forget(self, job_id: str) -> None:
        """A job whose kill was asked stopped after running a while: nothing to compute. O(1)."""
        self._killed.pop(job_id, None)

    def tick(self, now: float) -> int:
        """One more message received at ``now``; its rank in the instant. O(1)."""
        if now != self.at:
            self.at = self.base = now
            self.count = 0
        self.count += 1
        return self.count

    def sleep_until(self, now: float, later: float) -> None:
        """The reply's actor sleeps from its last message at ``now`` until ``later``.

        SimGrid wakes it at ``clock + (later - clock)``, which may be an ulp past
        ``later``; the messages it then sends count from there. Runtime: O(count).
        """
        clock = self.clocks(now, self.rank(now), self.rank(now))[1]
        self.at, self.count = later, 0
        self.base = clock + (later - clock)

    def rank(self, now: float) -> int:
        """Messages received so far at ``now`` (0 at a new instant). O(1)."""
        return self.count if now == self.at else 0

    @property
    def delay(self) -> tuple[float, float]:
        """(latency, transfer) of a message from the master host to itself.

        (0, 0) if the platform's routes are unknown.
        """
        if self._delay is None:
            from batpolicy.simulator.delays import message_delays
            delays = message_delays(self._platform)
            self._delay = delays.from_master if delays is not None else (0.0, 0.0)
        return self._delay

    def clocks(self, now: float, first: int, last: int) -> tuple[float, float]:
        """Batsim's clock at its ``first`` and ``last`` messages of the instant ``now``.

        Computed as SimGrid computes it: each message ends at (start + latency) + transfer.
        Runtime complexity: O(last).
        """
        latency, transfer = self.delay
        clock = start = self.base if now == self.at else now
        for rank in range(1, last + 1):
            clock = (clock + latency) + transfer
            if rank == first:
                start = clock
        return start, clock
