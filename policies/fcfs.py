"""FCFS without backfilling: start jobs strictly in submission order.

Feitelson, Rudolph & Schwiegelshohn, *Parallel job scheduling — a status report*,
JSSPP 2004, §3.1 (FCFS as the baseline every backfilling scheme improves on).

Reference implementation reproduced decision for decision: batsched ``fcfs`` (Batsim
team's C++ schedulers, v1.4): the queue head
starts as soon as enough machines are free, on the lowest free ids; no later job passes
it. Jobs larger than the platform (or asking for no machine, which Batsim cannot run)
are rejected when submitted. Decision order within one reply follows batsched: first
the waiting jobs that can now start, then the new submissions in order.

Deviation: batsched only re-tries the queue after a completion; we also re-try after
machines become available again (batsched ignores availability events).
"""

from __future__ import annotations

from collections import deque

from batpolicy.policies.base import Decisions, Policy
from batpolicy.protocol.types import Decision, ExecuteJob, RejectJob
from batpolicy.scheduler.allocation import take_lowest
from batpolicy.scheduler.intervalset import difference, size
from batpolicy.scheduler.jobs import Job, JobStatus
from batpolicy.scheduler.state import ClusterState


class Fcfs(Policy):
    """Strict first come, first served on the lowest free machine ids."""

    name = "fcfs"

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        self._queue: deque[Job] = deque()
        self._incoming: list[Job] = []

    def on_job_submitted(self, job: Job, state: ClusterState) -> Decisions:
        """Remember the submission; it is queued or started in :meth:`decide`."""
        self._incoming.append(job)
        return None

    def decide(self, now: float, state: ClusterState) -> list[Decision]:
        """Start queue heads while they fit, then handle new submissions in order."""
        out: list[Decision] = []
        queue = self._queue
        free = state.free
        nfree = size(free)
        while queue and (queue[0].status is not JobStatus.WAITING or queue[0].res <= nfree):
            job = queue.popleft()
            if job.status is not JobStatus.WAITING:  # started or rejected outside this policy
                continue
            alloc = take_lowest(free, job.res)
            free = difference(free, alloc)
            nfree -= job.res
            out.append(ExecuteJob(job.id, alloc))
        for job in self._incoming:
            if job.res > state.nb_machines or job.res <= 0:
                out.append(RejectJob(job.id))
            elif queue or job.res > nfree:
                queue.append(job)
            else:
                alloc = take_lowest(free, job.res)
                free = difference(free, alloc)
                nfree -= job.res
                out.append(ExecuteJob(job.id, alloc))
        self._incoming.clear()
        return out
