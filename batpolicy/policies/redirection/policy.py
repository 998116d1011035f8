"""Scheduling with redirection (Faure, Lucarelli, Richard & Trystram, IPDPSW 2020, Alg. 1).

Faure, Lucarelli, Richard & Trystram, *Online scheduling with redirection for parallel
jobs*, IPDPSW 2020 (hal-02944032), §III, Algorithms 1 and 2. The machines are split into a
principal group and a redirection group (fraction α); each group is scheduled by its own
base policy (EASY for both in the paper, §III-B); a running job of the principal group
that "harms" many submissions is killed and restarted from scratch in the redirection
group.

Algorithm 1 (``SCHEDULER(SP1, SP2, j)``), where it lives:

- l. 2–3: a submission that finds the principal queue empty and enough free principal
  machines starts at once and triggers nothing (:meth:`Redirection.on_job_submitted`);
- l. 4–5: otherwise Algorithm 2 runs: its counting part (l. 2–6) in the same hook, its
  selection part (l. 7–11) once per Batsim message in :meth:`Redirection.decide`;
- l. 6–8: kill T (KILL_JOB, in ``decide``), and when Batsim acknowledges it (JOB_KILLED,
  :meth:`Redirection.on_job_killed`) register a copy and queue it in the redirection group;
- l. 11: schedule the principal group with SP1, l. 12: the redirection group with SP2
  (``decide``, through two :class:`~.groups.GroupView`).

Algorithm 2 is in :mod:`.counters`; the protocol side of kill-and-restart in
:mod:`batpolicy.policies.toolkit.copies`.

Deviations and readings (each also in ``docs/redirection.md``):

1. Alg. 1, l. 2 prints ``NbAvail(Resources) ≤ q_j``; the text (§III-B: "if the queue is
   empty and there are enough available resources, the job starts directly") says ≥.
   We follow the text.
2. Alg. 2 selects per submitted job; §III-B says the decision is taken "once all
   submitted jobs have proceeded". With several submissions in one Batsim message we
   count them all, then select at most one job per message.
3. Alg. 2, l. 7 prints ``r_i ≤ m'``; we use the text's condition q_l ≤ α·m (the size of
   the redirection group, ⌈α·m⌉ machines).
4. Filter: the text's size filter (q_k ≥ q_j) is the default, since §III-B describes it
   as the setting of the experiments; Alg. 2's walltime filter is ``filter=walltime``.
5. Killing is not instantaneous on Batsim: T's machines are freed when JOB_COMPLETED
   (COMPLETED_KILLED) arrives, in the next message at the same simulated time; the
   principal group is rescheduled then. A job whose kill arrives after it completed on
   its own is not restarted (counted as ``nb_redirections_moot``).
6. A job is only selected if its copy can be registered (profile known and
   self-contained, or profile reuse): we never kill what we cannot restart.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable, Mapping
from typing import Any, cast

from batpolicy.errors import ConfigError
from batpolicy.policies.base import Decisions, Policy
from batpolicy.policies.redirection.configuration import (
    PARAMETERS,
    base_params,
    check_params,
    copy_planner,
    log_split,
)
from batpolicy.policies.redirection.counters import PressureCounters, choose
from batpolicy.policies.redirection.groups import GroupView, split_machines
from batpolicy.policies.toolkit.copies import (
    COPY_KEY,
    CopyPlanner,
    metadata_value,
    user_job_outcomes,
    wasted_processor_seconds,
)
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.clock import Clock
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.outcomes import compute_metrics
from batpolicy.scheduler.view import PolicyView

log = logging.getLogger(__name__)

PRINCIPAL, REDIRECTION = "principal", "redirection"


class Redirection(Policy):
    """Two base policies on a principal and a redirection group; kill-and-restart between."""

    name = "redirection"
    parameters = PARAMETERS

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        """Check the parameters and build both base policies (no side effect beyond)."""
        super().__init__(params)
        from batpolicy.policies import registry  # deferred: the registry imports this module

        p = self.params
        check_params(p, self.name)
        self.principal_policy = registry.make_policy(
            p["principal_policy"], base_params(p, registry, "principal"))
        self.redirection_policy = registry.make_policy(
            p["redirection_policy"], base_params(p, registry, "redirection"))
        self.clock = self._clock  # hand the clock to both base policies
        self.counters = PressureCounters(p["theta"], p["filter"])
        self.active = False
        self.principal_machines = MachineSet()
        self.redirection_machines = MachineSet()
        self.planner: CopyPlanner | None = None
        self._state: PolicyView | None = None
        self._views: dict[str, GroupView] = {}
        self._copies: dict[str, str] = {}  # copy id -> original id
        self._alive_copies: set[str] = set()  # copies not yet completed
        self._pending: dict[str, Job] = {}  # copies registered in this reply, not in state yet
        self._killing: dict[str, tuple[Job, str]] = {}  # killed id -> (job, reserved copy id)
        self._reserved: set[str] = set()
        self._batch_skip: set[str] = set()  # this message's submissions not queued
        self._batch_used = 0  # principal machines taken by this message's direct starts
        self._select = False
        self._registration_sent = False
        self._oversized_logged = False
        self.nb_redirections = 0
        self.nb_redirections_moot = 0
        self.wasted_processor_seconds = 0.0
        #: original id -> copy id of every restarted job
        self.redirected_ids: dict[str, str] = {}

    @property
    def needs_dynamic_jobs(self) -> bool:
        """Whether Batsim must run with ``--enable-dynamic-jobs``: only if α > 0.

        ``batpolicy simulate`` reads it to enable dynamic jobs by itself. With α = 0
        there is no redirection group, so no copy is ever registered.

        >>> Redirection().needs_dynamic_jobs, Redirection({"alpha": "0"}).needs_dynamic_jobs
        (True, False)
        """
        return self.params["alpha"] > 0

    # -------------------------------------------------------------------- clock
    @property
    def clock(self) -> Clock:  # type: ignore[override]
        """The wall clock; setting it also sets the base policies' clocks."""
        return self._clock

    @clock.setter
    def clock(self, value: Clock) -> None:
        """Set the clock of this policy and of both base policies."""
        self._clock = value
        for base in (getattr(self, "principal_policy", None),
                     getattr(self, "redirection_policy", None)):
            if base is not None:
                base.clock = value

    # -------------------------------------------------------------------- views
    def _view(self, group: str) -> PolicyView:
        return cast(PolicyView, self._views[group])

    def _group_policy(self, job_id: str) -> tuple[Policy, PolicyView]:
        if job_id in self._copies:
            return self.redirection_policy, self._view(REDIRECTION)
        return self.principal_policy, self._view(PRINCIPAL)

    def _sync_pending(self, view: PolicyView) -> None:
        if self._pending:
            jobs = view.jobs
            for jid in [j for j in self._pending if j in jobs]:
                del self._pending[jid]

    # -------------------------------------------------------------------- hooks
    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """Split the machines, check Batsim's configuration, start both base policies."""
        self._state = view
        p = self.params
        self.planner, problem = copy_planner(view, p["copy_workload"], self.needs_dynamic_jobs)
        if problem is not None:
            if not self.needs_dynamic_jobs:
                log.info("redirection: %s; '%s' on all %d machines, no job will be redirected",
                         problem, self.principal_policy.name, view.nb_machines)
            elif p["on_unsupported"] == "error":
                raise ConfigError(f"policy 'redirection': {problem} "
                                  "(or set on_unsupported=fallback)")
            else:
                log.warning("redirection: %s; falling back to '%s' on all %d machines, "
                            "no job will be redirected", problem, self.principal_policy.name,
                            view.nb_machines)
            self.active = False
            self.principal_machines, self.redirection_machines = view.all_machines, MachineSet()
        else:
            self.active = True
            self.principal_machines, self.redirection_machines = split_machines(
                view.nb_machines, p["alpha"], p["grow"], p["original_size"] or None)
            assert self.planner is not None
            log_split(p, view, self.principal_machines, self.redirection_machines,
                      (self.principal_policy.name, self.redirection_policy.name), self.planner)
        copies = self._copies
        self._views = {
            PRINCIPAL: GroupView(view, self.principal_machines, lambda j: j not in copies,
                                 {}, PRINCIPAL),
            REDIRECTION: GroupView(view, self.redirection_machines, copies.__contains__,
                                   self._pending, REDIRECTION),
        }
        out = _as_list(self.principal_policy.on_simulation_begins(self._view(PRINCIPAL)))
        if self.active:
            out += _as_list(self.redirection_policy.on_simulation_begins(self._view(REDIRECTION)))
        return out

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """Alg. 1, l. 2–5 and Alg. 2, l. 2–6: count the pressure of a job that must wait."""
        self._sync_pending(view)
        if self.active:
            self._count_submission(job, view)
        return self.principal_policy.on_job_submitted(job, self._view(PRINCIPAL))

    def _count_submission(self, job: Job, view: PolicyView) -> None:
        nb_principal = len(self.principal_machines)
        if job.res > nb_principal or job.res <= 0:
            self._batch_skip.add(job.id)  # the principal policy will reject it
            if not self._oversized_logged and job.res > nb_principal:
                self._oversized_logged = True
                log.warning("redirection: job '%s' needs %d machines, more than the principal "
                            "group's %d (run with grow=true on a grown platform to keep such "
                            "jobs)", job.id, job.res, nb_principal)
            return
        alive_waiting = sum(1 for c in self._alive_copies if c in view.waiting)
        others_waiting = len(view.waiting) - alive_waiting - 1 - len(self._batch_skip)
        available = len(view.free & self.principal_machines) - self._batch_used
        if others_waiting <= 0 and job.res <= available:  # Alg. 1, l. 2: starts at once
            self._batch_skip.add(job.id)
            self._batch_used += job.res
            return
        running = (k for k in view.running.values()  # Alg. 2, l. 2: RunningJobs (principal)
                   if k.id not in self._copies and not k.kill_requested
                   and k.id not in self._killing)
        if self.counters.count(job, running):  # Alg. 1, l. 5 -> Alg. 2, l. 2-6
            self._select = True

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """Forget the job's counter, account a killed run, tell its group's policy."""
        self._sync_pending(view)
        self.counters.forget(job.id)
        if job.id in self._killing and job.final_state is t.JobState.COMPLETED_KILLED:
            assert job.finish is not None
            self.wasted_processor_seconds += wasted_processor_seconds(job, job.finish)
        self._alive_copies.discard(job.id)
        policy, group_view = self._group_policy(job.id)
        return policy.on_job_completed(job, group_view)

    def on_job_killed(self, event: t.JobKilled, view: PolicyView) -> Decisions:
        """Alg. 1, l. 8: register the copies of the jobs we killed, queue them in SP2."""
        self._sync_pending(view)
        out: list[t.Decision] = []
        foreign = tuple(jid for jid in event.job_ids if jid not in self._killing)
        for jid in event.job_ids:
            if jid in self._killing:
                original, copy_id = self._killing.pop(jid)
                out += self._restart(original, copy_id, view)
        if foreign:  # kills asked by a base policy go back to it
            for policy, group in ((self.principal_policy, PRINCIPAL),
                                  (self.redirection_policy, REDIRECTION)):
                ids = tuple(j for j in foreign if (j in self._copies) == (group == REDIRECTION))
                if ids:
                    sub = t.JobKilled(event.timestamp, ids,
                                      {j: v for j, v in event.job_progress.items() if j in ids})
                    out += _as_list(policy.on_job_killed(sub, self._view(group)))
        return out

    def _restart(self, original: Job, copy_id: str, view: PolicyView) -> list[t.Decision]:
        self._reserved.discard(copy_id)
        if original.final_state is not t.JobState.COMPLETED_KILLED:
            self.nb_redirections_moot += 1
            log.info("redirection: job '%s' ended (%s) before its kill took effect; not "
                     "restarted", original.id, original.final_state)
            return []
        assert self.planner is not None
        plan = self.planner.plan(original, copy_id, view.profiles)
        # the state numbers jobs in registration order: this is the rank it will give
        seq = len(view.jobs) + sum(1 for j in self._pending if j not in view.jobs)
        copy = Job(id=copy_id, subtime=original.subtime, res=original.res,
                   walltime=original.walltime, profile=plan.profile_name, seq=seq,
                   raw=plan.job, dynamic=True)
        self._copies[copy_id] = original.id
        self._alive_copies.add(copy_id)
        self._pending[copy_id] = copy
        self.redirected_ids[original.id] = copy_id
        self.nb_redirections += 1
        log.debug("redirection: t=%g restart '%s' as '%s' in the redirection group",
                  view.now, original.id, copy_id)
        out = plan.decisions(original.id)
        out += _as_list(self.redirection_policy.on_job_submitted(copy, self._view(REDIRECTION)))
        return out

    def on_resources_changed(self, event: t.Event, view: PolicyView) -> Decisions:
        """Both base policies hear of availability changes."""
        return self._both(lambda pol, group_view: pol.on_resources_changed(event, group_view))

    def on_requested_call(self, now: float, view: PolicyView) -> Decisions:
        """Both base policies hear of a REQUESTED_CALL (they ignore calls they did not ask)."""
        return self._both(lambda pol, group_view: pol.on_requested_call(now, group_view))

    def on_notify(self, event: t.Notify, view: PolicyView) -> Decisions:
        """Both base policies hear of other NOTIFY events."""
        return self._both(lambda pol, group_view: pol.on_notify(event, group_view))

    def on_simulation_ends(self, view: PolicyView) -> Decisions:
        """Both base policies hear of the end."""
        return self._both(lambda pol, group_view: pol.on_simulation_ends(group_view))

    def _both(self, call: Any) -> list[t.Decision]:
        out = _as_list(call(self.principal_policy, self._view(PRINCIPAL)))
        if self.active:
            out += _as_list(call(self.redirection_policy, self._view(REDIRECTION)))
        return out

    # ------------------------------------------------------------------- decide
    def decide(self, now: float, view: PolicyView) -> list[t.Decision]:
        """Alg. 1, l. 5–12: maybe redirect one job, then schedule both groups."""
        self._sync_pending(view)
        out: list[t.Decision] = []
        if self._select:
            self._select = False
            target = self._choose(view)  # Alg. 2, l. 7-9
            if target is not None:
                self.counters.reset()  # Alg. 2, l. 10
                copy_id = self._reserve_copy_id(target, view)
                self._killing[target.id] = (target, copy_id)
                log.debug("redirection: t=%g kill '%s' (counter above θ=%g)", now, target.id,
                          self.params["theta"])
                out.append(t.SetJobMetadata(target.id, metadata_value(COPY_KEY, copy_id)))
                out.append(t.KillJob((target.id,)))  # Alg. 1, l. 7
        self._batch_skip.clear()
        self._batch_used = 0
        out += self.principal_policy.decide(now, self._view(PRINCIPAL))  # Alg. 1, l. 11
        if self.active:
            out += self.redirection_policy.decide(now, self._view(REDIRECTION))  # Alg. 1, l. 12
        if (view.dynamic_jobs_enabled and not self._registration_sent
                and view.no_more_static_jobs and not self._killing):
            self._registration_sent = True  # no submission left, so no redirection left
            out.append(t.RegistrationFinished())
        return out

    def _choose(self, view: PolicyView) -> Job | None:
        capacity = len(self.redirection_machines)
        running = view.running
        assert self.planner is not None
        candidates = []
        for jid in self.counters.over_threshold():  # Alg. 2, l. 7: Counter_l > θ
            job = running.get(jid)
            if (job is not None and job.res <= capacity  # Alg. 2, l. 7: q_l ≤ m'
                    and not job.kill_requested and jid not in self._killing
                    and self.planner.can_copy(job, view.profiles)):
                candidates.append(job)
        return choose(candidates, self.counters, self.params["conflict"])  # Alg. 2, l. 9

    def _reserve_copy_id(self, original: Job, view: PolicyView) -> str:
        assert self.planner is not None
        jobs = view.jobs
        copy_id = self.planner.copy_id(original, lambda j: j in jobs or j in self._reserved)
        self._reserved.add(copy_id)
        return copy_id

    # -------------------------------------------------------------------- stats
    def stats(self) -> dict[str, Any]:
        """nb_redirections, wasted processor-seconds of killed runs, user-job metrics.

        ``user_jobs`` counts each user job once (a redirected job as its copy, from its
        original submission), with the bounded slowdown's τ = ``bsld_tau``.
        """
        out: dict[str, Any] = {
            "nb_redirections": self.nb_redirections,
            "nb_redirections_moot": self.nb_redirections_moot,
            "wasted_processor_seconds": self.wasted_processor_seconds,
            "principal_group": str(self.principal_machines),
            "redirection_group": str(self.redirection_machines),
            "redirection_active": self.active,
        }
        if self._state is not None:
            out["user_jobs"] = compute_metrics(user_job_outcomes(self._state.jobs.values()),
                                               nb_machines=self._state.nb_machines,
                                               tau=self.params["bsld_tau"])
        for key, base in (("principal_stats", self.principal_policy),
                          ("redirection_stats", self.redirection_policy)):
            if sub := base.stats():
                out[key] = sub
        return out


def _as_list(decisions: Iterable[t.Decision] | None) -> list[t.Decision]:
    return list(decisions) if decisions else []
