"""EASY as Batsim 5's example EDC schedules it: ``--policy easy-edc5``.

EASY backfilling: Lifka, *The ANL/IBM SP scheduling system*, JSSPP 1995. Batsim 5 ships an
EASY backfilling *External Decision Component* with its tests (``test/edc-lib/easy.cpp`` at
Batsim ``ed55a974``). A researcher who moves from Batsim 4
to Batsim 5 meets two EASYs: batsched's ``easy_bf`` (batpolicy's ``easy``, the reference
of every Batsim 4 check) and this one. They differ in one rule and one number:

- the backfilling rule (easy.cpp l. 166-168): a waiting job that would end after the
  queue head's shadow time may start now when it needs no more hosts than the *number*
  of hosts left over at the shadow time (``extra``), whichever hosts it takes now;
  ``easy_bf`` lets it take only machines the head's reservation does not hold;
- the shadow time and a candidate's end are kept in single-precision ``float``
  (l. 127, 163), reproduced by :func:`as_c_float`.

As in the EDC, a job larger than the platform or without a positive walltime is rejected
when it is submitted (l. 99-102), the running jobs are ordered by the end their walltime
gives, in the order they started (a stable sort: ties keep that order), and hosts are
taken lowest first. Beside real Batsim 5 (``serve --batsim 5 --policy easy-edc5``) it
gives the jobs.csv of the C++ library byte for byte (``tests/batsim5/``).

Deviation: the EDC never hears of unavailable machines (Batsim 5 ``ed55a974`` does not
send those events); here hosts are taken among the free ones the view reports, so that
under Batsim 4 a machine marked unavailable is not chosen. Without such events the two
sets are the same; when machines come back, the queue is looked at again.
"""

from __future__ import annotations

import struct
from typing import Any

from batpolicy.policies.base import Decisions, Policy
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import Decision, ExecuteJob, RejectJob
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

_C_FLOAT = struct.Struct("f")


def as_c_float(x: float) -> float:
    """``x`` stored in a C ``float`` and read back, as the EDC keeps its times.

    >>> as_c_float(0.1) == 0.1, as_c_float(272.75)
    (False, 272.75)
    """
    return float(_C_FLOAT.unpack(_C_FLOAT.pack(x))[0])


class EasyEdc5(Policy):
    """EASY backfilling as Batsim 5's example EDC (``test/edc-lib/easy.cpp``) decides it."""

    name = "easy-edc5"
    reads_finished_jobs = False  # its own queue and running table only
    parameters = ()

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        self.queue: list[Job] = []
        #: job id -> (job, its hosts, the end its walltime gives), in start order
        self.running: dict[str, tuple[Job, MachineSet, float]] = {}
        self.available = MachineSet()
        self.nb_hosts = 0
        self.need_scheduling = False

    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """Every host is available (easy.cpp l. 88-91)."""
        self.nb_hosts = view.nb_machines
        self.available = view.all_machines
        return None

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Reject what can never run, queue the rest (l. 93-107)."""
        if job.res > self.nb_hosts or job.walltime is None or job.walltime <= 0:
            return [RejectJob(job.id)]
        self.need_scheduling = True
        self.queue.append(job)
        return None

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Its hosts are available again (l. 108-119)."""
        self.need_scheduling = True
        _, hosts, _ = self.running.pop(job.id)
        self.available = self.available | hosts
        return None

    def on_resources_changed(self, event: Any, view: PolicyView) -> Decisions:
        """Machines went down or came back (Batsim 4 only): look at the queue again."""
        self.need_scheduling = True
        return None

    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """Start the queue's head jobs that fit, then backfill (l. 124-190)."""
        out: list[Decision] = []
        if not self.need_scheduling:
            return out
        self.need_scheduling = False
        free = self.available & view.free
        queue = self.queue
        extra = 0
        shadow = -1.0
        i = 0
        while i < len(queue):  # the head jobs that fit start, in order
            job = queue[i]
            if job.res <= len(free):
                free = self._start(job, now, free, out)
                del queue[i]
                continue
            # the first that does not: its shadow time and the hosts left over then
            extra = len(free)
            for running, _, end in sorted(self.running.values(), key=lambda r: r[2]):
                extra += running.res
                if extra >= job.res:
                    extra -= job.res
                    shadow = as_c_float(end)
                    break
            i += 1
            break
        while i < len(queue):  # backfilling
            job = queue[i]
            end = as_c_float(now + float(job.walltime or 0))
            if job.res <= len(free) and (job.res <= extra or end <= shadow):
                free = self._start(job, now, free, out)
                del queue[i]
                if end > shadow:
                    extra -= job.res
            elif not free:
                break
            else:
                i += 1
        return out

    def _start(self, job: Job, now: float, free: MachineSet,
               out: list[Decision]) -> MachineSet:
        """Start ``job`` now on the lowest free hosts; the hosts left free."""
        hosts = free.lowest(job.res)
        self.running[job.id] = (job, hosts, now + float(job.walltime or 0))
        self.available = self.available - hosts
        out.append(ExecuteJob(job.id, hosts))
        return free - hosts
