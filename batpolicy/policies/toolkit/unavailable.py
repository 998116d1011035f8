"""Jobs running on machines that become unavailable: keep them, kill them, or requeue them.

Batsim 4.2.1 leaves a job running on machines an ``--events`` file makes unavailable
(Batsim's protocol: external events): the scheduler must kill it itself. :class:`Evacuation` is the
policy-side helper that does so, for any policy that wires it (EASY's ``on_unavailable``
parameter does):

* ``keep`` — do nothing (Batsim's default behaviour, and batsched's);
* ``kill`` — KILL_JOB every job still running on a machine that went down since the
  last decision (the job ends ``COMPLETED_KILLED``);
* ``requeue`` — kill it, and once Batsim acknowledges the kill (JOB_KILLED), register a
  copy that starts from scratch and waits in the queue like a new submission: pybatsim's
  ``resubmit_job`` convention (Batsim's protocol: dynamic jobs) with the copy machinery of
  redirection (:mod:`batpolicy.policies.toolkit.copies`: same res, walltime and subtime,
  metadata ``parent=<id>``, so metrics count each user job once). A job that completed on its own
  before the kill acted is not requeued. Needs ``--enable-dynamic-jobs`` and
  ``--acknowledge-dynamic-jobs`` (the acknowledgement is the message in which the copy
  is queued); profiles are reused with ``--enable-profile-reuse``, else re-registered.

Kills are decided in ``decide()``, not in the NOTIFY hook: a job whose completion comes
later in the same message must not be killed (Batsim aborts on a kill of a job whose
completion it already reported). Registration is finished (NOTIFY
``registration_finished``) whenever the static submissions are over and no kill or copy
is pending, and reopened (``continue_registration``) if a later failure needs a copy.
"""

from __future__ import annotations

import logging
from collections.abc import Iterable

from batpolicy.errors import ConfigError
from batpolicy.policies.toolkit.copies import SAME_WORKLOAD, CopyPlanner
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.jobs import Job, JobStatus
from batpolicy.scheduler.view import PolicyView

log = logging.getLogger(__name__)

#: Values of a policy's ``on_unavailable`` parameter.
MODES = ("keep", "kill", "requeue")


class Evacuation:
    """Kill (and optionally requeue) the jobs running on machines that became unavailable.

    The host policy calls :meth:`begin` at SIMULATION_BEGINS, :meth:`machines_changed`
    from its ``on_resources_changed`` hook, and :meth:`decide` first in its ``decide``:
    it returns the decisions to send first and the requeued copies that arrived (to be
    queued as submissions); :meth:`finish` returns what must close the reply.
    """

    __slots__ = ("mode", "_down", "_killing", "_copies", "_planner", "requeued")

    def __init__(self, mode: str = "keep") -> None:
        if mode not in MODES:
            raise ConfigError(f"on_unavailable must be one of {', '.join(MODES)}, got {mode!r}")
        self.mode = mode
        self._down = MachineSet()
        self._killing: set[str] = set()
        self._copies: set[str] = set()
        self._planner: CopyPlanner | None = None
        #: Number of copies registered so far.
        self.requeued = 0

    def begin(self, view: PolicyView) -> None:
        """Check that Batsim's flags allow the mode; raise :class:`ConfigError` if not."""
        if self.mode != "requeue":
            return
        config = view.config
        if not (view.dynamic_jobs_enabled and view.dynamic_jobs_acknowledged):
            raise ConfigError("on_unavailable=requeue registers copies of the killed jobs: run "
                              "Batsim with --enable-dynamic-jobs --acknowledge-dynamic-jobs "
                              "(or use on_unavailable=kill)")
        self._planner = CopyPlanner(
            SAME_WORKLOAD, reuse=bool(config.get("profile-reuse-enabled", False)),
            forwarded=bool(config.get("profiles-forwarded-on-submission", False)))

    def machines_changed(self, event: t.Event) -> None:
        """Remember machines that went down; their jobs are handled at the next decision."""
        if self.mode != "keep" and isinstance(event, t.Notify) and event.resources is not None \
                and event.kind == t.NotifyType.EVENT_MACHINE_UNAVAILABLE:
            self._down |= event.resources

    def decide(self, view: PolicyView) -> tuple[list[t.Decision], list[Job]]:
        """Kills, copy registrations, and the copies acknowledged since the last call.

        Runtime complexity: O(running jobs) after a failure, O(pending copies) otherwise.
        """
        out: list[t.Decision] = []
        if self._down:
            victims = [job for job in view.running.values()
                       if not job.kill_requested and job.allocation is not None
                       and job.allocation & self._down and self._may_kill(job, view)]
            self._down = MachineSet()
            if victims:
                out.append(t.KillJob(tuple(job.id for job in victims)))
                if self.mode == "requeue":
                    self._killing.update(job.id for job in victims)
        for job_id in sorted(self._killing):
            job = view.jobs[job_id]
            if job.status is not JobStatus.COMPLETED or job.kill_requested:
                continue  # the kill is not acknowledged yet
            self._killing.discard(job_id)
            if job.final_state is t.JobState.COMPLETED_KILLED:
                out.extend(self._register_copy(job, view, reopen=not out_has_reopen(out)))
        arrived = [view.jobs[c] for c in sorted(self._copies)
                   if c in view.jobs and view.jobs[c].status is JobStatus.WAITING]
        self._copies.difference_update(job.id for job in arrived)
        return out, arrived

    def finish(self, view: PolicyView, sent: Iterable[t.Decision]) -> list[t.Decision]:
        """NOTIFY registration_finished once nothing can need a copy any more, for now."""
        if self.mode != "requeue" or not view.no_more_static_jobs:
            return []
        sent = list(sent)
        reopened = out_has_reopen(sent)
        if (view.registration_finished and not reopened) or self._killing or self._copies \
                or self._down:
            return []
        return [t.RegistrationFinished()]

    def _may_kill(self, job: Job, view: PolicyView) -> bool:
        if self.mode != "requeue":
            return True
        assert self._planner is not None
        if self._planner.can_copy(job, view.profiles):
            return True
        log.warning("job '%s' runs on machines that became unavailable but its profile '%s' "
                    "cannot be registered again: it is left running", job.id, job.profile)
        return False

    def _register_copy(self, job: Job, view: PolicyView, reopen: bool) -> list[t.Decision]:
        assert self._planner is not None
        copy_id = self._planner.copy_id(job, lambda i: i in view.jobs or i in self._copies)
        plan = self._planner.plan(job, copy_id, view.profiles)
        self._copies.add(copy_id)
        self.requeued += 1
        out: list[t.Decision] = []
        if reopen and view.registration_finished:
            out.append(t.ContinueRegistration())
        out.extend(plan.decisions(job.id))
        return out


def out_has_reopen(decisions: Iterable[t.Decision]) -> bool:
    """Whether ``decisions`` reopen registration (NOTIFY continue_registration).

    >>> out_has_reopen([t.ContinueRegistration()]), out_has_reopen([])
    (True, False)
    """
    return any(isinstance(d, t.ContinueRegistration) for d in decisions)
