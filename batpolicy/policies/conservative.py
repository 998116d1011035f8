"""Conservative backfilling: every waiting job holds a reservation.

Mu'alem & Feitelson, IEEE TPDS 12(6), 2001, §2: "every job is given a reservation when it
enters the system"; a smaller job may be moved ahead (backfilled) only if it delays no
job that is ahead of it in the queue; when a job ends earlier than its estimate, the
schedule is compressed so that jobs may start earlier than their reservations.

Reference implementation reproduced decision for decision: batsched 1.4's
``conservative_bf`` (``src/algo/conservative_bf.cpp``, the Batsim team's reference), on
its planning structure, :class:`~batpolicy.policies.toolkit.plan.slices.SliceSchedule`:

1. Jobs asking for more machines than the platform has, or without a walltime, are
   rejected on submission (conservative_bf.cpp l. 57-66); the others join the queue.
2. The jobs that ended since the last decision are removed from the schedule, whose
   present then moves to now (l. 49-50, 75).
3. If no job ended, only the newly queued jobs are added, in submission order, each at
   its first fit (the earliest time the same machines stay free for its whole planned
   duration; the lowest ids among them) (l. 81-95). Otherwise the schedule is
   compressed: every queued job, in queue order, is removed and added again at its
   first fit, the others keeping their reservations meanwhile, so no job ever gets a
   later one (l. 96-124).
4. The jobs whose reservation begins now are started on their reserved machines
   (l. 89-93, 116-120).

The queue order is batsched's FCFS: the date a job was queued, then its id compared
as strings (queue.cpp ``FCFSOrder::compare``). A job's planned duration is its walltime
plus batsched's ``rjms_delay`` (its ``-d`` option, 5 s by default: the time a resource
manager takes to kill a job that reaches its walltime; json_workload.cpp l. 65), in
exact rational arithmetic as batsched's.

Options: ``no_walltime=run`` plans jobs without a walltime as holding their machines
until the schedule's horizon (batsched's Schedule does so for them; conservative_bf, the
default, rejects them); ``rjms_delay`` (seconds, default 5, batsched's default).
Beyond batsched: machines that become unavailable (batsched's conservative_bf ignores
it) and a job still running after its planned end (possible with ``rjms_delay=0`` on a
platform with latencies; batsched aborts) make the policy re-plan around the running
jobs and the unavailable machines (held until they return, or the job ends), then
re-add every queued job in order.
"""

from __future__ import annotations

import logging
from fractions import Fraction
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.policies.base import Decisions, Parameter, Policy
from batpolicy.policies.toolkit.plan.slices import SliceSchedule
from batpolicy.policies.toolkit.timing import DecisionTimer
from batpolicy.protocol.types import Decision, Event, ExecuteJob, RejectJob
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

log = logging.getLogger(__name__)

#: The plan's holder of the unavailable machines (not a job id: Batsim's contain a '!').
_UNAVAILABLE = "(unavailable machines)"


class ConservativeBackfilling(Policy):
    """Conservative backfilling on batsched's time-slice schedule of machine ids."""

    name = "conservative"
    parameters = (
        Parameter("no_walltime", str, "reject", "jobs without a walltime: reject them as "
                  "batsched's conservative_bf does, or run them (they then hold their "
                  "machines until the schedule's horizon)", choices=("reject", "run")),
        Parameter("rjms_delay", float, 5.0, "seconds added to every walltime when planning "
                  "(batsched's -d/--rjms_delay, default 5)"),
    )

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        if not 0 <= self.params["rjms_delay"] < float("inf"):
            raise ConfigError(f"policy 'conservative': parameter 'rjms_delay' = "
                              f"{self.params['rjms_delay']!r} must be finite and >= 0")
        self._delay = Fraction(self.params["rjms_delay"])
        self._reject_no_walltime = self.params["no_walltime"] == "reject"
        self.schedule: SliceSchedule | None = None
        #: Waiting jobs with the date they were queued (batsched's release date).
        self._queue: list[tuple[float, str, Job]] = []
        self._new: list[Job] = []
        self._rejected: list[Job] = []
        self._ended: list[str] = []
        self._machines_changed = False
        self.decision_timer = DecisionTimer()

    # ------------------------------------------------------------------- hooks
    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """An empty schedule over the platform's machines, from now to the horizon."""
        self.schedule = SliceSchedule(view.all_machines, Fraction(view.now))
        return None

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Queue the job, or mark it for rejection (too large, or no walltime)."""
        if not 0 < job.res <= view.nb_machines or (
                job.walltime is None and self._reject_no_walltime):
            self._rejected.append(job)
        else:
            self._new.append(job)
        return None

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Its reservation goes at the next decision, which then compresses the schedule."""
        self._ended.append(job.id)
        return None

    def on_resources_changed(self, event: Event, view: PolicyView) -> Decisions:
        """Machines became (un)available: the next decision re-plans around them."""
        self._machines_changed = True
        return None

    # ------------------------------------------------------------------ decide
    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """Remove ended jobs, place new (or, after an end, all) queued jobs, start due ones."""
        began = self.clock()
        schedule = self.schedule
        assert schedule is not None, "SIMULATION_BEGINS comes first"
        out: list[Decision] = [RejectJob(job.id) for job in self._rejected]
        compress = bool(self._ended)
        for job_id in self._ended:
            schedule.remove(job_id)
        queue = self._queue
        queue.extend((now, job.id, job) for job in self._new)
        present = Fraction(now)
        if present > schedule.slices[0].end or self._machines_changed:
            schedule = self._replan(present, view)
            compress = True
            self._machines_changed = False
        schedule.update_first_slice(present)
        queue.sort(key=lambda item: (item[0], item[1]))  # FCFS: queued date, then id
        placing = [item[2] for item in queue] if compress else self._new
        started: set[str] = set()
        for job in placing:
            if compress:
                schedule.remove(job.id)
            duration = None if job.walltime is None else Fraction(job.walltime) + self._delay
            alloc = schedule.add_first_fit(job.id, job.res, duration)
            if alloc.starts_now:
                out.append(ExecuteJob(job.id, alloc.machines))
                started.add(job.id)
        if started:
            self._queue = [item for item in queue if item[1] not in started]
        self._rejected.clear()
        self._new.clear()
        self._ended.clear()
        self.decision_timer.add(self.clock() - began)
        return out

    def _replan(self, now: Fraction, view: PolicyView) -> SliceSchedule:
        """A new plan holding the running jobs' and the unavailable machines; queue re-added.

        Two cases where batsched's plan no longer describes the platform. Machines that
        became unavailable (batsched's conservative_bf ignores it and would start jobs on
        them; Batsim refuses those) are held until they return. A job still running
        after its planned end (``rjms_delay=0`` on a platform with latencies; batsched
        aborts) holds its machines until it ends (the plan's horizon); the other running
        jobs until their planned ends. Runtime complexity: O(r·s).
        """
        if not self._machines_changed:
            log.warning("t=%s: a running job outlived its planned end; re-planning",
                        float(now))
        schedule = self.schedule = SliceSchedule(view.all_machines, now)
        down = view.unavailable  # held for good, also under jobs still running on them
        if down:
            schedule.hold(_UNAVAILABLE, down, None)
        for job in sorted(view.running.values(), key=lambda j: j.id):
            end = None
            if job.walltime is not None and job.start is not None:
                end = Fraction(job.start) + Fraction(job.walltime) + self._delay
                if end <= now:
                    end = None
            assert job.allocation is not None
            machines = job.allocation - down if down else job.allocation
            if machines:
                schedule.hold(job.id, machines, end)
        return schedule

    def stats(self) -> dict[str, Any]:
        """Decision times in milliseconds (``decision_time_ms``, docs/metrics.md)."""
        return self.decision_timer.summary("decision_time_ms")
