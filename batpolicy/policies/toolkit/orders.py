"""Queue orders: the keys a policy's ``order`` parameter selects.

Apart from :mod:`batpolicy.policies.toolkit.queue` (whose FCFS index needs numpy) so that a policy
that only sorts its queue, as :mod:`batpolicy.policies.fcfs` does, imports no numpy:
``serve --policy fcfs`` reaches its socket with 0.07-0.08 s of CPU instead of 0.19-0.21 s
(numpy's import and OpenBLAS's thread pool; docs/performance.md).
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

from batpolicy.scheduler.jobs import Job

__all__ = ["ORDERS", "fcfs_key", "largest_key", "ljf_key", "sjf_key", "smallest_key"]


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
