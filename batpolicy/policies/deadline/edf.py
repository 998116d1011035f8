"""EDF, earliest deadline first: the queue-based deadline baseline.

Klusáček, Matyska & Rudová, *Local Search for Deadline Driven Grid Scheduling*, 2007,
§4 (EDF as one of the queue-based policies of production systems, after Pinedo 2005):
waiting jobs are kept in deadline order; the head starts as soon as it fits, and no
later job passes it (no backfilling, like ``fcfs``). Jobs without a deadline come after
every job with one; equal deadlines keep submission order.

``one_group=true`` keeps each job inside one machine (a group of hosts of one speed, §2):
the head starts on the fastest machine that has enough free hosts
(:func:`~batpolicy.policies.toolkit.groups.take_within_one_group`); a job larger than every
machine is rejected. Otherwise the lowest free host ids are taken, as batsched does.
"""

from __future__ import annotations

from batpolicy.policies.base import Decisions, Parameter, Policy
from batpolicy.policies.deadline.common import job_deadline
from batpolicy.policies.toolkit.allocation import take_lowest
from batpolicy.policies.toolkit.groups import (
    MachineGroup,
    fastest_first,
    machine_groups,
    take_within_one_group,
)
from batpolicy.policies.toolkit.queue import JobQueue
from batpolicy.protocol.types import Decision, ExecuteJob, RejectJob
from batpolicy.scheduler.jobs import Job, JobStatus
from batpolicy.scheduler.view import PolicyView

__all__ = ["Edf", "edf_key"]


def edf_key(job: Job) -> tuple[float, int]:
    """Deadline (``inf`` if none), then submission rank.

    >>> edf_key(Job("w0!1", 0.0, 1, None, "p", 3, raw={"deadline": 9}))
    (9.0, 3)
    """
    return (job_deadline(job), job.seq)


class Edf(Policy):
    """Strict earliest-deadline-first queue."""

    name = "edf"
    parameters = (Parameter("one_group", bool, False,
                            "keep each job inside one machine (group of hosts)"),)

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        self.queue = JobQueue(edf_key)
        self._rejected: list[Job] = []
        self._groups: list[MachineGroup] = []
        self._largest = 0

    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """Read the machines when jobs must stay inside one."""
        if self.params["one_group"]:
            self._groups = fastest_first(machine_groups(view))
            self._largest = max((g.cpus for g in self._groups), default=0)
        else:
            self._largest = view.nb_machines
        return None

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Queue the job by deadline, or reject it if it can never run."""
        if 0 < job.res <= self._largest:
            self.queue.add(job)
        else:
            self._rejected.append(job)
        return None

    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """Start the earliest-deadline jobs while the head fits."""
        out: list[Decision] = [RejectJob(job.id) for job in self._rejected]
        self._rejected.clear()
        free = view.free
        nfree = len(free)
        one_group = self.params["one_group"]
        while len(self.queue):
            job = self.queue.head()
            if job.status is not JobStatus.WAITING:
                self.queue.remove(job)
                continue
            if job.res > nfree:
                break
            alloc = (take_within_one_group(free, job.res, self._groups) if one_group
                     else take_lowest(free, job.res))
            if alloc is None:
                break
            self.queue.remove(job)
            free = free - alloc
            nfree -= job.res
            out.append(ExecuteJob(job.id, alloc))
        return out
