"""The waiting queue of a policy: FCFS by submission rank, or ordered by a key.

A FCFS queue also keeps each queued job's size and walltime in arrays indexed by
submission rank, so that a backfilling pass finds the next job that may start among thousands
in one vectorised scan (:meth:`JobQueue.next_backfill`) instead of a Python loop over the
whole queue at every completion.
"""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

import numpy as np
from sortedcontainers import SortedKeyList

from batpolicy.scheduler.jobs import Job, JobStatus

#: Below this many queued jobs a plain Python pass is cheaper than the vectorised scan.
VECTOR_MIN = 48


def fcfs_key(job: Job) -> int:
    """First come, first served: the submission rank."""
    return job.seq


def sjf_key(job: Job) -> tuple[float, int]:
    """Shortest (requested walltime) job first, then submission rank."""
    return (job.planned_walltime, job.seq)


def ljf_key(job: Job) -> tuple[float, int]:
    """Longest (requested walltime) job first, then submission rank."""
    return (-job.planned_walltime, job.seq)


def smallest_key(job: Job) -> tuple[int, int]:
    """Fewest machines first, then submission rank."""
    return (job.res, job.seq)


def largest_key(job: Job) -> tuple[int, int]:
    """Most machines first, then submission rank."""
    return (-job.res, job.seq)


#: Queue orders selectable by policies' ``order`` parameter.
ORDERS: dict[str, Callable[[Job], Any]] = {"fcfs": fcfs_key, "sjf": sjf_key, "ljf": ljf_key,
                                           "smallest": smallest_key, "largest": largest_key}


class JobQueue:
    """Waiting jobs kept sorted by ``key``.

    Runtime complexity: add and remove O(log n), head O(1), iteration O(n),
    :meth:`next_backfill` O(w) vectorised (FCFS) for the ``w`` submissions since
    the head's.

    >>> from batpolicy.scheduler.jobs import Job
    >>> q = JobQueue()
    >>> for i in (2, 0, 1):
    ...     q.add(Job(f"w0!{i}", 0.0, 1, None, "p", seq=i))
    >>> [j.id for j in q], q.head().id
    (['w0!0', 'w0!1', 'w0!2'], 'w0!0')
    """

    __slots__ = ("_jobs", "_ids", "_indexed", "_by_seq", "_res", "_walltime", "_queued",
                 "_top")

    def __init__(self, key: Callable[[Job], Any] = fcfs_key) -> None:
        self._jobs: SortedKeyList = SortedKeyList(key=key)
        self._ids: set[str] = set()
        # The rank-indexed arrays follow queue order only when the order is the rank.
        self._indexed = key is fcfs_key
        self._by_seq: dict[int, Job] = {}
        self._res = np.zeros(0, dtype=np.int64)
        self._walltime = np.zeros(0, dtype=np.float64)
        self._queued = np.zeros(0, dtype=np.bool_)
        self._top = 0  # one past the highest rank ever queued

    def add(self, job: Job) -> None:
        """Queue a job. Runtime complexity: O(log n) (amortised O(1) array growth)."""
        self._jobs.add(job)
        self._ids.add(job.id)
        if self._indexed:
            seq = job.seq
            if seq < 0:  # not a state-assigned rank: no index for this queue any more
                self._indexed = False
                return
            if seq >= len(self._res):
                self._grow(seq + 1)
            self._by_seq[seq] = job
            self._res[seq] = job.res
            self._walltime[seq] = job.planned_walltime
            self._queued[seq] = True
            if seq >= self._top:
                self._top = seq + 1

    def _grow(self, need: int) -> None:
        size = max(need, 2 * len(self._res), 1024)
        for name in ("_res", "_walltime", "_queued"):
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[:len(old)] = old
            setattr(self, name, new)

    def remove(self, job: Job) -> None:
        """Remove a queued job. Runtime complexity: O(log n)."""
        self._jobs.remove(job)
        self._ids.discard(job.id)
        if self._indexed:
            self._queued[job.seq] = False
            del self._by_seq[job.seq]

    def head(self) -> Job | None:
        """The first job in queue order, or None."""
        return self._jobs[0] if self._ids else None

    def first_waiting(self) -> Job | None:
        """The first job still waiting, dropping those started or rejected outside the policy."""
        head = self.head()
        while head is not None and head.status is not JobStatus.WAITING:
            self.remove(head)
            head = self.head()
        return head

    @property
    def indexed(self) -> bool:
        """Whether :meth:`next_backfill` works: FCFS order, state-given ranks."""
        return self._indexed

    def next_backfill(self, now: float, shadow: float, nfree: int, nextra: int,
                      after: int) -> Job | None:
        """The first queued job after rank ``after`` that EASY may backfill now, or None.

        A job may be backfilled if it fits the free machines (``res <= nfree``) and either
        ends by its walltime at or before the shadow time (``now + walltime <= shadow``,
        the same float sum as the policy's) or fits the extra machines (``res <=
        nextra``). Only for an :attr:`indexed` queue, whose order is the rank's.

        Runtime complexity: O(w) vectorised for the ``w`` ranks after ``after`` (and
        from the head's) up to the last submission.

        >>> from batpolicy.scheduler.jobs import Job
        >>> q = JobQueue()
        >>> for i in range(12):
        ...     q.add(Job(f"w0!{i}", 0.0, 1 + i % 4, 10.0 * (1 + i % 3), "p", seq=i))
        >>> q.next_backfill(0.0, 10.0, 3, 1, after=0).seq, q.next_backfill(0.0, 10.0, 3, 1, 4).seq
        (4, 6)
        >>> q.next_backfill(0.0, 10.0, 0, 0, after=0) is None
        True
        """
        if not self._indexed:
            raise ValueError("next_backfill needs a FCFS queue of state-ranked jobs")
        jobs = self._jobs
        if not jobs:
            return None
        lo, hi = max(jobs[0].seq, after + 1), self._top
        if lo >= hi:
            return None
        res = self._res[lo:hi]
        fits = res <= nfree
        fits &= ((now + self._walltime[lo:hi]) <= shadow) | (res <= nextra)
        fits &= self._queued[lo:hi]
        first = int(fits.argmax())
        return self._by_seq[lo + first] if fits[first] else None

    def __contains__(self, job: object) -> bool:
        return getattr(job, "id", None) in self._ids

    def __iter__(self) -> Iterator[Job]:
        return iter(list(self._jobs))

    def __len__(self) -> int:
        return len(self._ids)  # kept with _jobs; a set's len is not a Python-level call

    def __bool__(self) -> bool:
        return bool(self._ids)
