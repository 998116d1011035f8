"""The waiting queue of a policy: FCFS by submission rank, or ordered by a key.

A FCFS queue also keeps each queued job's size and walltime in arrays indexed by
submission rank, so that a backfilling pass finds the next job that may start among thousands
in one vectorised scan (:meth:`JobQueue.next_backfill`) instead of a Python loop over the
whole queue at every completion.
"""

from __future__ import annotations

from bisect import bisect_left, insort
from collections.abc import Callable, Iterator
from itertools import count
from operator import itemgetter
from typing import Any

import numpy as np

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

    The jobs are kept as ``(key, arrival, job)`` entries in one list sorted with C-level
    bisection (the arrival counter makes entries unique, so jobs are never compared):
    the key is computed once per job, and adding or removing costs a few calls where a
    ``SortedKeyList`` cost about ten Python-level ones (a queue sees one add and one
    remove per job: a tenth of EASY's calls per message).

    The price is one O(n) C-level move of pointers per add or remove. Measured
    (``bench/queue_sizes.py``: remove at the head, add at the tail, as FCFS does): 1.3 µs
    at 1,000 queued jobs against 1.7 µs with a ``SortedKeyList``, about even at 4,000,
    4.5 µs against 2.0 at 16,000 (the peak of RICC-2010, whose whole simulation still
    gains), 20 µs against 2.4 at 100,000: an overloaded sweep holding ~100,000 jobs in the
    queue pays that.

    Runtime complexity: add and remove O(log n) comparisons and one O(n) C-level move,
    head O(1), iteration O(n),
    :meth:`next_backfill` O(w) vectorised (FCFS) for the ``w`` submissions since
    the head's.

    >>> from batpolicy.scheduler.jobs import Job
    >>> q = JobQueue()
    >>> for i in (2, 0, 1):
    ...     q.add(Job(f"w0!{i}", 0.0, 1, None, "p", seq=i))
    >>> [j.id for j in q], q.head().id
    (['w0!0', 'w0!1', 'w0!2'], 'w0!0')
    """

    __slots__ = ("_key", "_entries", "_by_id", "_arrivals", "_indexed", "_by_seq", "_res",
                 "_walltime", "_queued", "_top")

    def __init__(self, key: Callable[[Job], Any] = fcfs_key) -> None:
        self._key = key
        self._entries: list[tuple[Any, int, Job]] = []  # sorted (key, arrival, job)
        self._by_id: dict[str, tuple[Any, int, Job]] = {}
        self._arrivals = count()
        # The rank-indexed arrays follow queue order only when the order is the rank.
        self._indexed = key is fcfs_key
        self._by_seq: dict[int, Job] = {}
        self._res = np.zeros(0, dtype=np.int64)
        self._walltime = np.zeros(0, dtype=np.float64)
        self._queued = np.zeros(0, dtype=np.bool_)
        self._top = 0  # one past the highest rank ever queued

    def add(self, job: Job) -> None:
        """Queue a job (``ValueError`` if a job with its id is queued already).

        Runtime complexity: O(log n) and a C-level move (amortised O(1) array growth).
        """
        if job.id in self._by_id:
            raise ValueError(f"job '{job.id}' is already in the queue")
        entry = (self._key(job), next(self._arrivals), job)
        insort(self._entries, entry)
        self._by_id[job.id] = entry
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
        """Remove a queued job (``ValueError`` if it is not queued).

        Runtime complexity: O(log n) and a C-level move.
        """
        entry = self._by_id.get(job.id)
        if entry is None or entry[2] is not job:
            raise ValueError(f"job '{job.id}' is not in the queue")
        del self._by_id[job.id]
        entries = self._entries
        del entries[bisect_left(entries, entry)]
        if self._indexed:
            self._queued[job.seq] = False
            del self._by_seq[job.seq]

    def head(self) -> Job | None:
        """The first job in queue order, or None."""
        entries = self._entries
        return entries[0][2] if entries else None

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
        entries = self._entries
        if not entries:
            return None
        lo, hi = max(entries[0][2].seq, after + 1), self._top
        if lo >= hi:
            return None
        res = self._res[lo:hi]
        fits = res <= nfree
        fits &= ((now + self._walltime[lo:hi]) <= shadow) | (res <= nextra)
        fits &= self._queued[lo:hi]
        first = int(fits.argmax())
        return self._by_seq[lo + first] if fits[first] else None

    def __contains__(self, job: object) -> bool:
        return getattr(job, "id", None) in self._by_id

    def __iter__(self) -> Iterator[Job]:
        return iter(list(map(_job_of, self._entries)))  # a snapshot: callers remove while going

    def __len__(self) -> int:
        return len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._entries)


_job_of = itemgetter(2)
