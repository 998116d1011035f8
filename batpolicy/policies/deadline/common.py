"""What the schedule-based deadline policies share: job facts and the plan kept in step.

Klusáček, Matyska & Rudová, *Local Search for Deadline Driven Grid Scheduling*, 2007,
§2–3. A job j has a release date r_j, a deadline d_j, a processing time p_{i,j} that
depends on the speed of machine i, and needs R_j CPUs of one machine. The schedule
(:class:`~batpolicy.policies.toolkit.plan.Plan`) holds one resource schedule per machine;
"jobs already sent to resources are not affected by the scheduling process" (§3).

:class:`PlannedPolicy` keeps the plan in step with the events (arrivals are placed by
the subclass, starts and ends are applied incrementally) and, at every decision, starts
the planned jobs whose planned start is now, on the lowest free hosts of their machine.

Choices where the paper is silent:

- *Processing time.* ``runtime=profile`` (default) takes the job's work from its
  profile (``delay`` seconds at the reference speed, or ``cpu`` flop), as the paper
  assumes known processing times; ``runtime=walltime`` plans with the walltime as the
  work at the reference speed. Either way the run time on machine i is
  ``work · reference_speed / s_i``, capped by the walltime (Batsim kills a job there).
  This matches the simulator's ``--job-model speed``.
- *Expected completion* of a planned job is its planned end in its resource schedule;
  its expected tardiness is ``max(C_j - d_j, 0)`` and it is expected late if
  ``C_j > d_j`` (the metrics' rule). A job without a deadline is never late.
- A running job that outlives its planned end is planned to end now (it is re-planned at
  every event until it ends); a job whose planned start is now but whose hosts are
  still busy then waits for the next event.
- A job wider than its machine's available CPUs (hosts down) is planned at ``inf``: it
  counts as late (if it has a deadline) without tardiness until the hosts return.
"""

from __future__ import annotations

import math
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.policies.base import Decisions, Parameter, Policy
from batpolicy.policies.toolkit.allocation import take_lowest
from batpolicy.policies.toolkit.groups import MachineGroup, machine_groups
from batpolicy.policies.toolkit.plan import MachinePlan, Plan, PlannedJob
from batpolicy.protocol.types import Decision, Event, ExecuteJob, RejectJob
from batpolicy.scheduler.jobs import Job, JobStatus
from batpolicy.scheduler.view import PolicyView

__all__ = ["PlannedPolicy", "job_deadline", "reference_work"]

RUNTIME_SOURCES = ("profile", "walltime")


def job_deadline(job: Job) -> float:
    """The job's absolute deadline, ``inf`` without one.

    **Shim** until ``Job.deadline`` (interface C) is on this branch: read ``job.raw``.

    >>> job_deadline(Job("w0!1", 0.0, 1, None, "p", 0, raw={"deadline": 50}))
    50.0
    """
    deadline = getattr(job, "deadline", None)
    if deadline is None and job.raw is not None:
        deadline = job.raw.get("deadline")
    return math.inf if deadline is None else float(deadline)


def reference_work(job: Job, profile: dict[str, Any] | None, source: str,
                   reference_speed: float) -> float:
    """Seconds of work at the reference speed (``inf`` when unknown and no walltime).

    Runtime complexity: O(1).

    >>> job = Job("w0!1", 0.0, 2, 100.0, "p", 0)
    >>> reference_work(job, {"type": "delay", "delay": 30}, "profile", 1e9)
    30.0
    >>> reference_work(job, {"type": "parallel_homogeneous_total", "cpu": 4e10}, "profile", 1e9)
    20.0
    >>> reference_work(job, {"type": "delay", "delay": 30}, "walltime", 1e9)
    100.0
    """
    if source == "profile" and profile is not None:
        kind = profile.get("type")
        if kind == "delay":
            return float(profile["delay"])
        if kind == "parallel_homogeneous":
            return float(profile["cpu"]) / reference_speed
        if kind == "parallel_homogeneous_total":
            return float(profile["cpu"]) / max(job.res, 1) / reference_speed
    return job.planned_walltime


class PlannedPolicy(Policy):
    """Base of the schedule-based policies: a :class:`Plan` of the machines, kept in step.

    Subclasses implement :meth:`place` (put new jobs into the plan) and may override
    :meth:`improve` (optimise the plan once per decision).
    """

    parameters = (
        Parameter("runtime", str, "profile", "processing time used in the plan",
                  choices=RUNTIME_SOURCES),
        Parameter("reference_speed", float, 1e9, "speed (flop/s) at which a delay "
                  "profile's seconds are measured (as --job-model speed)"),
        Parameter("ordered", bool, True, "a job starts no earlier than the job before it "
                  "in its resource schedule (the paper); false: fill earlier gaps"),
    )

    def __init__(self, params=None) -> None:  # type: ignore[no-untyped-def]
        super().__init__(params)
        if not self.params["reference_speed"] > 0:
            raise ConfigError(f"policy '{self.name}': parameter 'reference_speed' must be > 0, "
                              f"got {self.params['reference_speed']}")
        self.plan = Plan([])
        self.groups: list[MachineGroup] = []
        self._new: list[Job] = []
        self._rejected: list[Job] = []
        self._max_cpus = 0
        self.completed_late = 0  # U_C (§3 eq. 1), summed over machines
        self.completed_tardiness = 0.0  # T_C

    # ------------------------------------------------------------------ hooks
    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """Build one empty resource schedule per machine (group of hosts of one speed)."""
        self.groups = machine_groups(view)
        ref = self.params["reference_speed"]
        self.plan = Plan([MachinePlan(g.name, g.hosts, g.speed / ref,
                                      cpus=len(g.hosts - view.unavailable),
                                      ordered=self.params["ordered"]) for g in self.groups],
                         view.now)
        self._max_cpus = max((g.cpus for g in self.groups), default=0)
        return None

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Queue the arrival for :meth:`place`, or reject it if no machine can ever run it."""
        if 0 < job.res <= self._max_cpus:
            self._new.append(job)
        else:
            self._rejected.append(job)
        return None

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Free the job's CPUs in its machine's schedule; count U_C and T_C (§3)."""
        self.plan.finish(job.id)
        deadline = job_deadline(job)
        if job.finish is not None and job.finish > deadline:
            self.completed_late += 1
            self.completed_tardiness += job.finish - deadline
        return None

    def on_resources_changed(self, event: Event, view: PolicyView) -> Decisions:
        """Machines' usable CPU counts follow host availability."""
        for machine in self.plan.machines:
            machine.set_capacity(len(machine.hosts - view.unavailable))
        return None

    # ------------------------------------------------------------------ decide
    def decide(self, now: float, view: PolicyView) -> list[Decision]:
        """Reject impossible jobs, place arrivals, improve, start the jobs due now."""
        out: list[Decision] = [RejectJob(job.id) for job in self._rejected]
        self._rejected.clear()
        self.plan.advance(now)
        if self._new:
            unplaced = self.place([self.planned_job(job, view) for job in self._new])
            out.extend(RejectJob(job.id) for job in unplaced)
            self._new.clear()
            self.improve(now)
        out.extend(self._start_due(now, view))
        return out

    def planned_job(self, job: Job, view: PolicyView) -> PlannedJob:
        """The plan's view of a job (work at reference speed, walltime, deadline)."""
        work = reference_work(job, view.profile_of(job), self.params["runtime"],
                              self.params["reference_speed"])
        return PlannedJob(job.id, job.res, work, job.planned_walltime, job_deadline(job),
                          job.seq)

    def place(self, jobs: list[PlannedJob]) -> list[PlannedJob]:
        """Put the arrivals of this decision into the plan (submission order).

        Returns the jobs no machine can hold (they are rejected).
        """
        raise NotImplementedError

    def improve(self, now: float) -> None:
        """Optimise the plan after arrivals (nothing by default)."""
        return None

    def _start_due(self, now: float, view: PolicyView) -> list[Decision]:
        """Start every planned job whose planned start is now, on its machine's lowest free hosts.

        §3: the policy selects jobs from the schedule. Runtime complexity: O(n) plus
        stale machines.
        """
        out: list[Decision] = []
        free = view.free
        plan = self.plan
        for index, pjob in plan.due(now):
            job = view.job(pjob.id)
            if job.status is not JobStatus.WAITING:  # started or rejected by someone else
                plan.remove(pjob.id)
                continue
            hosts = free & plan.machines[index].hosts
            if len(hosts) < pjob.res:
                continue  # a running job outlived its plan: wait for its end
            alloc = take_lowest(hosts, pjob.res)
            free = free - alloc
            plan.start(pjob.id, now)
            out.append(ExecuteJob(pjob.id, alloc))
        return out

    def stats(self) -> dict[str, Any]:
        """U_C and T_C of the completed jobs, as the policy counted them."""
        return {"nb_completed_late": self.completed_late,
                "total_completed_tardiness": self.completed_tardiness}
