"""EASY backfilling (Lifka 1995; Mu'alem & Feitelson 2001, §2).

Reference implementation reproduced decision for decision: batsched ``easy_bf``
(Batsim team, v1.4), with FCFS queue order and lowest-id machine selection.

Each decision:

1. Start queue-head jobs while they fit now (lowest free ids).
2. Reserve for the first job that does not fit: its *shadow time* is the earliest
   time enough machines are expected free (running jobs end at start + walltime), and
   the reservation holds the lowest machine ids free then
   (:mod:`batpolicy.policies.toolkit.reservation`).
3. Backfill, in queue order, every other job that fits now and either ends (by its
   walltime) at or before the shadow time, or uses only machines the reservation does
   not need (the *extra* machines).

Only the newly submitted jobs can be backfilled when nothing was released since the
last decision (the state only got tighter), which is what makes a decision cheap;
after a completion or a change of machine availability the whole queue is scanned (for a
long FCFS queue, by a vectorised search of the next job that may start,
:meth:`~batpolicy.policies.toolkit.queue.JobQueue.next_backfill`).
Jobs larger than the platform, or asking for no machine, are rejected on submission.

Options: ``order=sjf|ljf|smallest|largest`` sorts the queue by walltime (shortest or
longest first) or by size instead of FCFS; ``no_walltime=run`` runs jobs without a
walltime (batsched's easy_bf, the default, rejects them);
``on_unavailable=kill|requeue`` kills (and requeues a copy of) the jobs running on machines
that become unavailable (:mod:`batpolicy.policies.toolkit.unavailable`; default ``keep``, as
Batsim);
``backfill_on=lowest`` puts a backfilled job that ends after the shadow time on the lowest
free ids rather than on the machines the reservation leaves (batsched's, the default
``unreserved``), and the reservation moves to the lowest machines still free at the shadow
time: EASY's counts (Mu'alem & Feitelson, §2, reason in numbers of nodes) kept, and the
placement a :mod:`batpolicy.gym` action gives (:func:`batpolicy.gym.baselines.easy` makes
this variant's decisions on its machines);
``allocator=`` chooses the machines (:mod:`batpolicy.policies.toolkit.allocation`; default
``lowest``, batsched's) and ``one_group=true`` keeps every job inside one platform group.
With a group-aware allocator a job fits when the allocator finds it machines, and the
head's reservation holds the machines the allocator would give it at the shadow time
(:func:`~batpolicy.policies.toolkit.reservation.plan_allocated_reservation`): EASY's guarantee
holds exactly, since backfilled jobs still only use reserved machines until the shadow
time.
"""

from __future__ import annotations

from batpolicy.policies.base import PLACEMENT_PARAMETERS, Decisions, Parameter, Placement, Policy
from batpolicy.policies.toolkit.allocation import allocate_or_lowest
from batpolicy.policies.toolkit.orders import ORDERS
from batpolicy.policies.toolkit.queue import VECTOR_MIN, JobQueue
from batpolicy.policies.toolkit.reservation import (
    Reservation,
    reserve_head,
    start_heads,
)
from batpolicy.policies.toolkit.unavailable import MODES, Evacuation
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import Decision, Event, ExecuteJob, RejectJob
from batpolicy.scheduler.jobs import Job, JobStatus
from batpolicy.scheduler.view import PolicyView

#: Enum members read once: under Python 3.11 ``JobStatus.X`` goes through EnumType's
#: Python-level ``__getattr__`` hook on every read (about ten times a global's cost).
_WAITING = JobStatus.WAITING


class EasyBackfilling(Policy):
    """EASY backfilling with a reservation for the queue head only."""

    name = "easy"
    reads_finished_jobs = False  # waiting and running jobs only (but see on_unavailable)
    parameters = (Parameter("order", str, "fcfs", "queue order", choices=tuple(ORDERS)),
                  Parameter("on_unavailable", str, "keep", "jobs running on machines that "
                            "become unavailable: keep, kill, or kill and requeue a copy "
                            "(needs Batsim's dynamic jobs, acknowledged)", choices=MODES),
                  Parameter("no_walltime", str, "reject", "jobs without a walltime: reject "
                            "them as batsched's easy_bf does, or run them (they then "
                            "reserve as if they never end)", choices=("reject", "run")),
                  Parameter("backfill_on", str, "unreserved", "machines of a backfilled job "
                            "that ends after the shadow time: the ones the head's reservation "
                            "leaves (batsched's easy_bf) or the lowest free ids (the "
                            "reservation then moves)", choices=("unreserved", "lowest")),
                  *PLACEMENT_PARAMETERS)

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        self.queue = JobQueue(ORDERS[self.params["order"]])
        self._new: list[Job] = []
        self._rejected: list[Job] = []
        self._released = True
        self._last_head: Job | None = None
        self._reservation: Reservation | None = None
        self.evacuation = Evacuation(self.params["on_unavailable"])
        # requeue reads a killed job's final state once its kill is acknowledged
        self.reads_finished_jobs = self.evacuation.mode == "requeue"
        self._reject_no_walltime = self.params["no_walltime"] == "reject"
        self._backfill_lowest = self.params["backfill_on"] == "lowest"
        self.placement = Placement(self.params)

    @property
    def last_reservation(self) -> Reservation | None:
        """The head's reservation made (or kept) at the last decision; None if none was needed.

        Read by tests and tools, as DPSA's attribute of the same name. Runtime complexity: O(1).
        """
        return self._reservation

    # ------------------------------------------------------------------- hooks
    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """Check Batsim's flags allow ``on_unavailable``."""
        self.evacuation.begin(view)
        return None

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Queue the job, or mark it for rejection if it can never run.

        Without a walltime it is rejected when ``no_walltime=reject``, as batsched's
        easy_bf does (easy_bf.cpp l. 55-59).
        """
        if not self.placement.can_ever_run(job, view) or (
                job.walltime is None and self._reject_no_walltime):
            self._rejected.append(job)
        else:
            self.queue.add(job)
            self._new.append(job)
        return None

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Machines were released: the next decision rescans the whole queue."""
        self._released = True
        return None

    def on_resources_changed(self, event: Event, view: PolicyView) -> Decisions:
        """Availability changed: rescan the whole queue and re-plan the reservation."""
        self._released = True
        self.evacuation.machines_changed(event)
        return None

    # ------------------------------------------------------------------ decide
    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """Kill/requeue on failed machines if asked, then EASY's decision."""
        if self.evacuation.mode == "keep":
            return self._decide(now, view)
        first, arrived = self.evacuation.decide(view)
        for job in arrived:  # requeued copies, acknowledged: queued as submissions
            self.on_job_submitted(job, view)
        out = first + self._decide(now, view)
        return out + self.evacuation.finish(view, out)

    def _decide(self, now: float, view: PolicyView) -> list[Decision]:
        """Start heads, reserve for the first that does not fit, backfill the rest."""
        queue = self.queue
        placement = self.placement
        plain = placement.plain
        lowest = self._backfill_lowest
        allocator = None if plain else placement.allocator  # None: lowest ids, fast paths
        platform = None if plain else placement.platform(view)
        heads = start_heads(queue, view.free, now, allocator, platform)  # 1. start heads
        out: list[Decision] = heads.decisions  # type: ignore[assignment]  # a new list
        if self._rejected:  # rejections first (they change nothing start_heads reads)
            out = [*(RejectJob(job.id) for job in self._rejected), *out]
            self._rejected.clear()
        free, nfree, started, head = heads.free, heads.nfree, heads.started, heads.head
        if head is None or nfree == 0:
            return self._done(head, None, out)
        rescan = self._released or head is not self._last_head or self._reservation is None
        reservation: Reservation | None
        if rescan or started:
            reservation = reserve_head(head, now, free, view, started,  # 2. reserve
                                       allocator, platform)
        else:
            reservation = self._reservation
        assert reservation is not None
        shadow = reservation.shadow_time
        reserved = reservation.machines
        # Long FCFS queues: the next job that may start is found by a vectorised scan
        # (toolkit.queue) instead of visiting every queued job; same jobs, same order.
        vector = rescan and queue.indexed and len(queue) >= VECTOR_MIN
        # The extra machines (free, not reserved): computed when a job that would end
        # after the shadow time first needs them (most decisions: none does), from the
        # machines still free then (same set); the scan needs only their count, taken
        # without building the set (|free - reserved| = |free| - |free & reserved|).
        extra: MachineSet | None = None
        nextra = 0
        if vector:
            nextra = nfree - free.intersection_cardinality(reserved)
        else:
            candidates = iter(list(queue) if rescan else [j for j in self._new if j in queue])
        after = head.seq
        while nfree:  # 3. backfill
            if vector:
                job = queue.next_backfill(now, shadow, nfree, nextra, after)
                if job is None:
                    break
                after = job.seq
            else:
                job = next(candidates, None)
                if job is None:
                    break
                if job is head or job.res > nfree:
                    continue
            if job.status is not _WAITING:  # started or rejected by someone else
                queue.remove(job)
                continue
            ends_by_shadow = now + job.planned_walltime <= shadow
            if ends_by_shadow:
                within = free
            else:
                if extra is None:
                    extra = free - reserved
                    nextra = len(extra)
                if job.res > nextra:
                    continue
                within = free if lowest else extra
            # lowest ids (take_lowest's own step: ``within`` holds job.res), else the allocator
            alloc = within.lowest(job.res) if allocator is None else \
                allocate_or_lowest(allocator, within, job, platform)
            if alloc is None:
                continue
            free = free - alloc
            nfree -= job.res
            queue.remove(job)
            out.append(ExecuteJob(job.id, alloc))
            if lowest:
                started.append((now + job.planned_walltime, alloc))
                if not ends_by_shadow and alloc.intersect(reserved):  # the reservation moves
                    reservation = reserve_head(head, now, free, view, started,
                                               allocator, platform)
                    shadow, reserved = reservation.shadow_time, reservation.machines
                    extra = free - reserved
                    nextra = len(extra)
                    continue
            if extra is not None:
                extra = extra - alloc
                nextra = len(extra)
            elif vector:  # the scan's count only
                nextra = nfree - free.intersection_cardinality(reserved)
        return self._done(head, reservation, out)

    def _done(self, head: Job | None, reservation: Reservation | None,
              out: list[Decision] | None = None) -> list[Decision]:
        self._last_head = head
        self._reservation = reservation
        self._released = False
        self._new.clear()
        return out if out is not None else []
