"""The waiting queue of a policy: FCFS by submission rank, or ordered by a key."""

from __future__ import annotations

from collections.abc import Callable, Iterator
from typing import Any

from sortedcontainers import SortedKeyList

from batpolicy.scheduler.jobs import Job


def fcfs_key(job: Job) -> int:
    """First come, first served: the submission rank."""
    return job.seq


def sjf_key(job: Job) -> tuple[float, int]:
    """Shortest (requested walltime) job first, then submission rank."""
    return (job.planned_walltime, job.seq)


#: Queue orders selectable by policies' ``order`` parameter.
ORDERS: dict[str, Callable[[Job], Any]] = {"fcfs": fcfs_key, "sjf": sjf_key}


class JobQueue:
    """Waiting jobs kept sorted by ``key``.

    Runtime complexity: add and remove O(log n), head O(1), iteration O(n).

    >>> from batpolicy.scheduler.jobs import Job
    >>> q = JobQueue()
    >>> for i in (2, 0, 1):
    ...     q.add(Job(f"w0!{i}", 0.0, 1, None, "p", seq=i))
    >>> [j.id for j in q], q.head().id
    (['w0!0', 'w0!1', 'w0!2'], 'w0!0')
    """

    __slots__ = ("_jobs", "_ids")

    def __init__(self, key: Callable[[Job], Any] = fcfs_key) -> None:
        self._jobs: SortedKeyList = SortedKeyList(key=key)
        self._ids: set[str] = set()

    def add(self, job: Job) -> None:
        """Queue a job."""
        self._jobs.add(job)
        self._ids.add(job.id)

    def remove(self, job: Job) -> None:
        """Remove a queued job."""
        self._jobs.remove(job)
        self._ids.discard(job.id)

    def head(self) -> Job | None:
        """The first job in queue order, or None."""
        return self._jobs[0] if self._jobs else None

    def __contains__(self, job: object) -> bool:
        return getattr(job, "id", None) in self._ids

    def __iter__(self) -> Iterator[Job]:
        return iter(list(self._jobs))

    def __len__(self) -> int:
        return len(self._jobs)

    def __bool__(self) -> bool:
        return bool(self._jobs)
