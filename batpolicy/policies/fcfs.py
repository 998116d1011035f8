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

Queue order: ``order=sjf|ljf|smallest|largest`` keeps the queue sorted by requested
walltime (shortest or longest first) or by size instead of by submission; the head of
that order blocks the others as in FCFS (no backfilling). The default ``fcfs`` is
batsched's.

Placement: ``allocator=`` chooses the machines (:mod:`batpolicy.policies.toolkit.allocation`;
default ``lowest``, batsched's); with a group-aware allocator the head starts when the
allocator finds it machines, and ``one_group=true`` rejects jobs larger than every group.
"""

from __future__ import annotations

from collections import deque
from collections.abc import Callable
from typing import Any

from sortedcontainers import SortedKeyList

from batpolicy.platforms.model import Platform
from batpolicy.policies.base import (
    PLACEMENT_PARAMETERS,
    Decisions,
    Parameter,
    Placement,
    Policy,
)
from batpolicy.policies.toolkit.allocation import take_lowest
from batpolicy.policies.toolkit.orders import ORDERS
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import Decision, ExecuteJob, RejectJob
from batpolicy.scheduler.jobs import Job, JobStatus
from batpolicy.scheduler.view import PolicyView

#: Enum members read once: under Python 3.11 ``JobStatus.X`` goes through EnumType's
#: Python-level ``__getattr__`` hook on every read (about ten times a global's cost).
_WAITING = JobStatus.WAITING


class Fcfs(Policy):
    """Strict first come, first served, on the lowest free ids unless ``allocator`` says."""

    name = "fcfs"
    reads_finished_jobs = False  # waiting and running jobs only
    parameters = (Parameter("order", str, "fcfs", "queue order (the head blocks the rest)",
                            choices=tuple(ORDERS)), *PLACEMENT_PARAMETERS)

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        self.placement = Placement(self.params)
        self._queue: deque[Job] = deque()
        self._incoming: list[Job] = []
        order = self.params["order"]
        #: another order than submission: one sorted queue, new jobs join it first
        self._sorted = None if order == "fcfs" else SortedKeyList(key=ORDERS[order])

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Remember the submission; it is queued or started in :meth:`decide`."""
        self._incoming.append(job)
        return None

    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """Start queue heads while they fit, then handle new submissions in order.

        While the head waits and still does not fit, nothing can start, as batsched's
        loop over its pending jobs stops at the first (``src/algo/fcfs.cpp``): new jobs
        join the queue behind it (or are rejected if they can never run), which is what
        :meth:`_decide_fifo` would do after :meth:`_start_heads` stopped at once. Most
        messages of a loaded run end here. Runtime complexity: O(1) per new job then,
        else that of :meth:`_decide_fifo`.
        """
        if self._sorted is not None:
            return self._decide_sorted(view)
        queue, incoming = self._queue, self._incoming
        if queue:
            head = queue[0]
            if head.status is not _WAITING or head.res <= len(view.free):
                return self._decide_fifo(view)
            if not incoming:
                return []
            out: list[Decision] = []
            can_ever_run = self.placement.can_ever_run
            for job in incoming:
                if can_ever_run(job, view):
                    queue.append(job)
                else:
                    out.append(RejectJob(job.id))
            incoming.clear()
            return out
        return self._decide_fifo(view) if incoming else []

    def _decide_fifo(self, view: PolicyView) -> list[Decision]:
        """Submission order: start heads while they fit, then take the new jobs in order.

        batsched 1.4's ``FCFS::make_decisions`` (``src/algo/fcfs.cpp``): released
        machines go to the queue's heads first, then each new job starts at once if
        nothing waits before it and it fits, else it joins the queue. Runtime
        complexity: O(k) for k new jobs, plus O(1) per started head and the allocator's.
        """
        out: list[Decision] = []
        queue = self._queue
        free = view.free
        nfree = len(free)
        placement = self.placement
        plain, allocate = placement.plain, placement.allocator.allocate
        platform = None if plain else placement.platform(view)
        if queue:
            free, nfree = self._start_heads(queue, queue.popleft, free, nfree, platform, out)
        for job in self._incoming:
            if not placement.can_ever_run(job, view):
                out.append(RejectJob(job.id))
                continue
            alloc = None
            if not queue and job.res <= nfree:
                alloc = take_lowest(free, job.res) if plain else allocate(free, job, platform)
            if alloc is None:
                queue.append(job)
            else:
                free = free - alloc
                nfree -= job.res
                out.append(ExecuteJob(job.id, alloc))
        self._incoming.clear()
        return out

    def _decide_sorted(self, view: PolicyView) -> list[Decision]:
        """Another queue order: queue the new jobs, then start heads while they fit.

        Runtime complexity: O(k log n) for k new jobs, plus O(1) per started head.
        """
        out: list[Decision] = []
        queue = self._sorted
        assert queue is not None
        placement = self.placement
        for job in self._incoming:
            if placement.can_ever_run(job, view):
                queue.add(job)
            else:
                out.append(RejectJob(job.id))
        self._incoming.clear()
        free = view.free
        platform = None if placement.plain else placement.platform(view)
        self._start_heads(queue, lambda: queue.pop(0), free, len(free), platform, out)
        return out

    def _start_heads(self, queue: Any, pop_head: Callable[[], object], free: MachineSet,
                     nfree: int, platform: Platform | None,
                     out: list[Decision]) -> tuple[MachineSet, int]:
        """Start the queue's head while it fits; the head blocks the rest (no backfilling).

        Jobs started or rejected outside this policy are dropped from the head. Returns
        the free machines and their count left. Runtime complexity: O(1) per started job
        plus the allocator's cost.
        """
        plain, allocate = self.placement.plain, self.placement.allocator.allocate
        while queue:
            job = queue[0]
            if job.status is not _WAITING:  # started or rejected outside this policy
                pop_head()
                continue
            if job.res > nfree:
                break
            alloc = take_lowest(free, job.res) if plain else allocate(free, job, platform)
            if alloc is None:
                break
            pop_head()
            free = free - alloc
            nfree -= job.res
            out.append(ExecuteJob(job.id, alloc))
        return free, nfree
