"""The waiting queue of a policy: FCFS by submission rank, or ordered by a key.

A FCFS queue also keeps each queued job's size and walltime in arrays in submission-rank
order, so that a backfilling pass finds the next job that may start among thousands in one
vectorised scan (:meth:`JobQueue.next_backfill`) instead of a Python loop over the whole
queue at every completion. A job that leaves keeps its slot, marked as fitting nothing,
until the left ones are half the slots; then one O(n) compaction drops them, so a scan
reads at most about twice the queue. The arrays are written when a scan needs them, not
as jobs come and go: a NumPy scalar assignment costs about seven of a dictionary, and
EASY made three per job (two as it came, one as it left) where most jobs leave before
any scan needs them.

A FCFS queue is that index alone: a job that leaves only clears its slot (and the head
moves past cleared slots), where a sorted list of all the queued jobs moved every entry
behind it (RICC-2010 queues up to 16,000 jobs, and most leave from the head). Another
order keeps the sorted list.
"""

from __future__ import annotations

import math
from bisect import bisect_left, bisect_right, insort
from collections.abc import Callable, Iterator
from itertools import count
from operator import itemgetter
from typing import Any

import numpy as np

from batpolicy.policies.toolkit.orders import fcfs_key
from batpolicy.scheduler.jobs import Job, JobStatus

#: Below this many queued jobs a plain Python pass is cheaper than the vectorised scan.
VECTOR_MIN = 48

#: The size recorded in the rank index for a job that left the queue: fits no count.
_DEAD = np.iinfo(np.int64).max

#: The rank index drops the slots of jobs that left once they are this many and half.
_COMPACT_MIN = 1024

#: Up to this many unwritten slots are written one NumPy scalar at a time: a fancy
#: assignment costs about ten scalar ones, and most scans follow one removal only (the
#: job the scan before found, in the same decision).
_SCALAR_WRITES = 4

#: Enum members read once: under Python 3.11 ``JobStatus.X`` goes through EnumType's
#: Python-level ``__getattr__`` hook on every read (about ten times a global's cost).
_WAITING = JobStatus.WAITING


def _sum_bound(now: float, shadow: float) -> float:
    """A walltime bound ``b`` such that ``now + w <= shadow`` (float sum) implies ``w <= b``.

    The float sum is within half an ulp of ``shadow`` and ``shadow - now`` within half an
    ulp of ``shadow - now``: two ulps of each more is a safe margin.

    >>> _sum_bound(10.0, 30.0) > 20.0, _sum_bound(10.0, 30.0) < 20.000001
    (True, True)
    >>> _sum_bound(0.0, math.inf)
    inf
    """
    gap = shadow - now
    return gap + 2.0 * (math.ulp(gap) + math.ulp(shadow))


def _may_backfill(job: Job, now: float, shadow: float, nfree: int, nextra: int) -> bool:
    """Whether EASY may backfill ``job`` now (the rule of :meth:`JobQueue.next_backfill`).

    It fits the free machines and either ends by the shadow time (the policy's own float
    sum) or fits the extra machines.
    """
    res = job.res
    return res <= nfree and (res <= nextra or now + job.planned_walltime <= shadow)


class JobQueue:
    """Waiting jobs kept sorted by ``key``.

    A FCFS queue of state-ranked jobs (:attr:`indexed`) keeps its jobs in rank-ordered
    slots only (module docstring): add appends a slot, remove clears one, O(1) amortised.
    Otherwise the jobs are kept as ``(key, arrival, job)`` entries in one list sorted with C-level
    bisection (the arrival counter makes entries unique, so jobs are never compared):
    the key is computed once per job, and adding or removing costs a few calls where a
    ``SortedKeyList`` cost about ten Python-level ones (a queue sees one add and one
    remove per job: a tenth of EASY's calls per message).

    The sorted entries' price is one O(n) C-level move of pointers per add or remove.
    Measured (``bench/experiments/queue_sizes.py``: remove at the head, add at the tail,
    as FCFS does): 1.3 µs at 1,000 queued jobs against 1.7 µs with a ``SortedKeyList``,
    about even at 4,000, 4.5 µs against 2.0 at 16,000, 20 µs against 2.4 at 100,000. A FCFS
    queue of state-ranked jobs (RICC-2010 peaks at 16,000) does not pay it.

    Runtime complexity: indexed, add O(1) amortised, remove O(log n), head O(1)
    amortised; else add and remove O(log n) comparisons and one O(n) C-level move,
    head O(1); iteration O(n),
    :meth:`next_backfill` O(w) vectorised (FCFS) for the ``w`` slots from the head's
    (at most about twice the queue; compaction amortised O(1) per remove).

    >>> from batpolicy.scheduler.jobs import Job
    >>> q = JobQueue()
    >>> for i in (2, 0, 1):
    ...     q.add(Job(f"w0!{i}", 0.0, 1, None, "p", seq=i))
    >>> [j.id for j in q], q.head().id
    (['w0!0', 'w0!1', 'w0!2'], 'w0!0')
    """

    __slots__ = ("_key", "_entries", "_by_id", "_arrivals", "_indexed", "_ranks", "_jobs",
                 "_res", "_walltime", "_capacity", "_unwritten", "_dead", "_least", "_sizes",
                 "_head", "_live", "_bound")

    def __init__(self, key: Callable[[Job], Any] = fcfs_key) -> None:
        self._key = key
        #: Not indexed: the sorted (key, arrival, job) entries, and each job's entry by id.
        self._entries: list[tuple[Any, int, Job]] = []
        #: Queued jobs by id: indexed, the job; else its entry.
        self._by_id: dict[str, Any] = {}
        self._arrivals = count()
        # The rank-ordered index is the queue when the order is the rank (_indexed).
        # Slot i holds the job of rank _ranks[i] (ascending); a job that left the queue
        # keeps its slot, None in _jobs and _DEAD as its size, until a compaction drops
        # the slots. _head: the first slot holding a job (len(_jobs) if none); _live: jobs.
        self._indexed = key is fcfs_key
        self._ranks: list[int] = []
        self._jobs: list[Job | None] = []
        self._head = 0
        self._live = 0
        self._res = np.zeros(0, dtype=np.int64)
        self._walltime = np.zeros(0, dtype=np.float64)
        self._capacity = 0  # len(self._res), without asking NumPy
        #: Slots whose arrays' entries are not written yet: their job, or None for a job
        #: that left (its size becomes _DEAD). Written by _write_slots before a scan.
        self._unwritten: dict[int, Job | None] = {}
        self._dead = 0  # slots of jobs no longer queued
        #: The smallest size among the queued jobs (inf: none) and the number of queued
        #: jobs of each size, kept for an indexed queue: a scan with fewer free machines
        #: than the smallest queued job answers at once (RICC-2010: one scan in eight).
        self._least: float = math.inf
        self._sizes: dict[int, int] = {}
        #: :meth:`next_backfill`'s walltime bound: (now, shadow, _sum_bound(now, shadow)).
        self._bound: tuple[float, float, float] = (math.nan, math.nan, math.nan)

    def add(self, job: Job) -> None:
        """Queue a job (``ValueError`` if a job with its id is queued already).

        Runtime complexity: O(log n) and a C-level move (amortised O(1) array growth).
        """
        if job.id in self._by_id:
            raise ValueError(f"job '{job.id}' is already in the queue")
        if self._indexed:
            seq = job.seq
            if seq >= 0:
                self._by_id[job.id] = job
                ranks = self._ranks
                slot = len(ranks)
                if slot == self._capacity:
                    self._grow(slot + 1)
                ranks.append(seq)
                self._jobs.append(job)
                self._live += 1
                self._unwritten[slot] = job  # its size and walltime, at the next scan
                res = job.res
                sizes = self._sizes
                sizes[res] = sizes.get(res, 0) + 1
                if res < self._least:
                    self._least = res
                if slot and ranks[slot - 1] >= seq:  # out of rank order (never from a state)
                    self._compact()
                return
            self._unindex()  # not a state-assigned rank: no index for this queue any more
        key = self._key
        entry = (job.seq if key is fcfs_key else key(job), next(self._arrivals), job)
        insort(self._entries, entry)
        self._by_id[job.id] = entry

    def _unindex(self) -> None:
        """The queued jobs become sorted entries (slot order is rank order): O(n)."""
        arrivals = self._arrivals
        self._entries = [(job.seq, next(arrivals), job) for job in self._jobs if job is not None]
        self._by_id = {entry[2].id: entry for entry in self._entries}
        self._indexed = False
        self._ranks, self._jobs, self._unwritten = [], [], {}
        self._head = self._live = self._dead = 0

    def _grow(self, need: int) -> None:
        size = max(need, 2 * len(self._res), 1024)
        for name in ("_res", "_walltime"):
            old = getattr(self, name)
            new = np.zeros(size, dtype=old.dtype)
            new[:len(old)] = old
            setattr(self, name, new)
        self._capacity = size

    def _write_slots(self) -> None:
        """Write the arrays' entries of the slots added or left since the last write.

        Runtime complexity: O(u) for u unwritten slots: two C-level fancy assignments, or
        up to ``2 * _SCALAR_WRITES`` scalar ones for a few.
        """
        unwritten = self._unwritten
        if not unwritten:
            return
        if len(unwritten) <= _SCALAR_WRITES:  # e.g. the job the last scan found, now gone
            res, walltime = self._res, self._walltime
            for slot, job in unwritten.items():
                if job is None:
                    res[slot] = _DEAD
                else:
                    res[slot] = job.res
                    walltime[slot] = job.planned_walltime
            unwritten.clear()
            return
        slots = np.fromiter(unwritten, np.intp, len(unwritten))  # converted once, used twice
        jobs = unwritten.values()
        self._res[slots] = [_DEAD if job is None else job.res for job in jobs]
        # a left job's walltime is moot (its size fits nothing): written too, in one pass
        self._walltime[slots] = [math.inf if job is None else job.planned_walltime
                                 for job in jobs]
        unwritten.clear()

    def _compact(self) -> None:
        """Drop the slots of jobs no longer queued and put the rest in rank order: O(n)."""
        self._write_slots()
        jobs = sorted((job for job in self._jobs if job is not None), key=fcfs_key)
        self._jobs = jobs  # type: ignore[assignment]
        self._ranks = [job.seq for job in jobs]
        n = len(jobs)
        self._res[:n] = [job.res for job in jobs]
        self._walltime[:n] = [job.planned_walltime for job in jobs]
        self._dead = 0
        self._head = 0

    def remove(self, job: Job) -> None:
        """Remove a queued job (``ValueError`` if it is not queued).

        Runtime complexity: O(log n) and a C-level move (and O(distinct sizes) queued when
        the last job of the smallest size leaves an indexed queue).
        """
        by_id = self._by_id
        if self._indexed:
            if by_id.get(job.id) is not job:
                raise ValueError(f"job '{job.id}' is not in the queue")
            del by_id[job.id]
            jobs = self._jobs
            slot = bisect_left(self._ranks, job.seq)
            while jobs[slot] is not job:  # another job of that rank (not from a state)
                slot += 1
            jobs[slot] = None
            self._unwritten[slot] = None  # its size becomes _DEAD at the next scan
            self._dead += 1
            self._live -= 1
            if slot == self._head:  # the next job becomes the head (amortised O(1))
                head, end = slot + 1, len(jobs)
                while head < end and jobs[head] is None:
                    head += 1
                self._head = head
            res, sizes = job.res, self._sizes
            left = sizes[res] - 1
            if left:
                sizes[res] = left
            else:  # the last queued job of its size: the smallest may grow (O(sizes))
                del sizes[res]
                if res == self._least:
                    self._least = min(sizes, default=math.inf)
            if self._dead >= _COMPACT_MIN and 2 * self._dead >= len(self._ranks):
                self._compact()
            return
        entry = by_id.get(job.id)
        if entry is None or entry[2] is not job:
            raise ValueError(f"job '{job.id}' is not in the queue")
        del by_id[job.id]
        entries = self._entries
        del entries[bisect_left(entries, entry)]

    def head(self) -> Job | None:
        """The first job in queue order, or None."""
        if self._indexed:
            return self._jobs[self._head] if self._live else None
        entries = self._entries
        return entries[0][2] if entries else None

    def first_waiting(self) -> Job | None:
        """The first job still waiting, dropping those started or rejected outside the policy."""
        while True:  # head(), inline: once or twice per message
            if self._indexed:
                head = self._jobs[self._head] if self._live else None
            else:
                head = self._entries[0][2] if self._entries else None
            if head is None or head.status is _WAITING:
                return head
            self.remove(head)

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

        Runtime complexity: O(1) when ``nfree`` is below the smallest queued job's size;
        else O(log n) to find the window, then O(w) vectorised for its ``w`` slots (jobs
        still queued and not yet compacted ones) after ``after`` and from the head's.

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
        if not self._live or nfree < self._least:  # no queued job fits the free machines
            return None
        ranks = self._ranks
        lo = bisect_right(ranks, after)
        if lo < self._head:
            lo = self._head
        hi = len(ranks)
        if lo >= hi:
            return None
        jobs = self._jobs
        job = jobs[lo]  # the next rank first: a fifth of RICC's scans find it
        if job is not None and job.res <= nfree and (  # queued; _may_backfill, inline
                job.res <= nextra or now + job.planned_walltime <= shadow):
            return job
        if self._unwritten:  # _write_slots' own test, without its call
            self._write_slots()
        # One pass over the window and no float sum per job: ``walltime <= bound`` keeps
        # every job with ``now + walltime <= shadow``, and at a float boundary perhaps a
        # few more, which the exact test below skips.
        # Fewer passes in the two usual cases: no extra machine a job could fit (27 % of
        # the calls on RICC-2010), every free machine extra (27 %): the walltime is moot.
        res = self._res[lo:hi]
        fits = res <= nfree
        if nextra < nfree:
            bound = self._bound  # the bound of the last (now, shadow): one per decision
            if bound[0] != now or bound[1] != shadow:
                bound = self._bound = (now, shadow, _sum_bound(now, shadow))
            fits &= self._walltime[lo:hi] <= bound[2]
            if nextra >= self._least:  # a left job's size (_DEAD) fits nothing
                fits |= res <= nextra
        first = int(fits.argmax())
        while fits[first]:
            job = jobs[lo + first]  # queued: a left job's size (_DEAD) fits nothing
            if _may_backfill(job, now, shadow, nfree, nextra):  # type: ignore[arg-type]
                return job
            fits[first] = False
            first = int(fits.argmax())
        return None

    def __contains__(self, job: object) -> bool:
        return getattr(job, "id", None) in self._by_id

    def __iter__(self) -> Iterator[Job]:
        # a snapshot: callers remove while going
        if self._indexed:
            return iter([job for job in self._jobs[self._head:] if job is not None])
        return iter(list(map(_job_of, self._entries)))

    def __len__(self) -> int:
        return self._live if self._indexed else len(self._entries)

    def __bool__(self) -> bool:
        return bool(self._live if self._indexed else self._entries)


_job_of = itemgetter(2)
