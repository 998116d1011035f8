"""How the embedded simulator applies each decision of a reply, as Batsim 4.2.1 does.

:class:`DecisionHandlers` is mixed into :class:`~batpolicy.scheduler.sim.engine.Simulator`:
one ``_do_<decision>`` per decision type (PROTOCOL.md §1.4), each validated first by
:mod:`.validation` (where Batsim aborts) and then applied to the simulator's jobs,
machines and heap. Kept apart from the message loop so that job models and accounting
can grow without the engine growing.
"""

from __future__ import annotations

import logging
from typing import Any

from batpolicy.errors import ConfigError, InputError, InvalidDecision
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.jobfields import JobFieldError
from batpolicy.scheduler.sim import validation as v
from batpolicy.scheduler.sim.actors import JobEnd, Waiter
from batpolicy.scheduler.sim.bookkeeping import ProfileTable, SimJob
from batpolicy.scheduler.sim.core import CALL, COMPLETION
from batpolicy.scheduler.sim.wire import round_progress, wire_json, wire_time

log = logging.getLogger("batpolicy.scheduler.sim.engine")

_RUNNING = JobState.RUNNING
_KILLED = JobState.COMPLETED_KILLED
_REJECTED = JobState.REJECTED
_SUCCESS = JobState.COMPLETED_SUCCESSFULLY
#: Batsim rounds CALL_ME_LATER waits shorter than this up to it (``waiter_process``).
MIN_WAIT = 1e-5


class DecisionHandlers:
    """The ``_do_*`` handlers of :class:`Simulator` (a mixin; state lives in the engine)."""

    def _do_execute(self, d: t.ExecuteJob) -> None:
        job = v.check_execute(self, d)
        now = self._queue.now
        alloc = d.alloc
        self.machines.occupy(alloc)
        job.state = _RUNNING
        job.alloc = alloc
        job.mapping = d.mapping
        job.storage_mapping = d.storage_mapping
        job.start = now
        self._running[job.id] = job
        self._start_rank[job.id] = (now, self._instant.rank(now))
        end = job.model.start(job, now, self)
        job.end = end
        self._dirty = self._moving
        job.end_seq = self._queue.schedule(JobEnd(self, job), COMPLETION, at=end)

    def _do_reject(self, d: t.RejectJob) -> None:
        job = v.check_reject(self, d)
        job.state = _REJECTED
        self._record(job, None, None)

    def _do_kill(self, d: t.KillJob) -> None:
        """Queue the kills; Batsim's killer acts once the whole reply is read."""
        rank = self._instant.rank(self._queue.now)
        for job in v.check_kill(self, d):
            job.kill_requested = True
            self._kill_rank[job.id] = rank
            self._kills.append(job)
        self._kill_groups.append(len(self._kills))

    def _perform_kills(self) -> None:
        """Kill, then acknowledge each KILL_JOB: JOB_COMPLETED per really killed job, JOB_KILLED."""
        now = self._queue.now
        stamp = wire_time(now)
        begin = 0
        for end in self._kill_groups:
            group = self._kills[begin:end]
            begin = end
            if not group:
                continue  # every job of this KILL_JOB was already being killed: no killer
            progress: dict[str, Any] = {}
            for job in group:
                if job.state is not _RUNNING:
                    continue  # completed before the kill: listed, no progress
                if job.end_seq >= 0:
                    progress[job.id] = round_progress(job.model.progress(job, now, self))
                else:
                    progress[job.id] = {"profile_name": job.profile, "progress": 0.0}
                job.state = _KILLED
                job.return_code = -1
                job.end_seq = -1
                self._finish(job, now)
                self._outbox.append(t.JobCompleted(stamp, job.id, _KILLED, -1,
                                                   job.alloc if job.alloc is not None
                                                   else MachineSet()))
            self._outbox.append(t.JobKilled(stamp, tuple(j.id for j in group), progress))
        self._kills = []
        self._kill_groups = []

    def _do_call_me_later(self, d: t.CallMeLater) -> None:
        v.check_call_me_later(self, d)
        self._waiters += 1
        self._queue.schedule(Waiter(self), CALL, max(d.at - self._queue.now, MIN_WAIT))

    def _do_register_profile(self, d: t.RegisterProfile) -> None:
        v.check_register_profile(self, d)
        table = self.tables.get(d.workload_name)
        if table is None:
            table = self.tables[d.workload_name] = ProfileTable()
        profiles = dict(table.definitions)
        profiles[d.profile_name] = dict(d.profile)
        try:
            self._model_for(d.workload_name).check(d.workload_name, d.profile_name, profiles)
        except InputError as exc:
            raise v.fail("REGISTER_PROFILE", str(exc), self._queue.now) from None
        table.add(d.profile_name, dict(d.profile))

    def _do_register_job(self, d: t.RegisterJob) -> None:
        desc = v.check_register_job(self, d)
        workload = d.job_id.split("!", 1)[0]
        walltime = desc.get("walltime", -1)
        profile = str(desc["profile"])
        try:
            job = SimJob(d.job_id, workload, float(desc["subtime"]), int(desc["res"]),
                         None if walltime == -1 else float(walltime), profile,
                         self.tables[workload].definition(profile), desc, dynamic=True)
        except JobFieldError as exc:
            raise InvalidDecision(f"REGISTER_JOB at t={self._queue.now}: {exc}",
                                  job_id=d.job_id) from None
        try:
            job.model = self._model_of(job)
        except ConfigError as exc:
            raise InvalidDecision(f"REGISTER_JOB at t={self._queue.now}: {exc}",
                                  job_id=d.job_id) from None
        self.jobs[d.job_id] = job
        self._registered.add(d.job_id)
        self._nb_open += 1
        if self.options.acknowledge_dynamic_jobs:  # Batsim's job object has the full id
            ack = {**desc, "id": d.job_id} if "id" in desc else desc
            self._outbox.append(t.JobSubmitted(
                wire_time(self._queue.now), d.job_id, wire_json(ack),
                wire_json(job.profile_data) if self.options.forward_profiles else None))

    def _do_registration_finished(self, d: t.RegistrationFinished) -> None:
        v.check_registration_notify(self, "registration_finished")
        self.registration_finished = True

    def _do_continue_registration(self, d: t.ContinueRegistration) -> None:
        v.check_registration_notify(self, "continue_registration")
        self.registration_finished = False

    def _do_metadata(self, d: t.SetJobMetadata) -> None:
        v.check_metadata(self, d).metadata = d.metadata

    def _do_change_job_state(self, d: t.ChangeJobState) -> None:
        """Batsim's bookkeeping only: nothing starts, a running job's execution is stopped."""
        job = v.check_change_job_state(self, d)
        now = self._queue.now
        target = d.job_state
        if target is _RUNNING:
            job.state = _RUNNING
            job.start = now
            job.end_seq = -1
            self._running[job.id] = job
        elif target is _REJECTED:
            job.state = _REJECTED
            self._record(job, None, None)
        else:
            job.state = target
            job.return_code = -1 if target is not _SUCCESS else 0
            job.end_seq = -1
            self._finish(job, now)

    def _do_set_resource_state(self, d: t.SetResourceState) -> None:
        v.check_set_resource_state(self, d)
        self._outbox.append(t.ResourceStateChanged(wire_time(self._queue.now), d.resources,
                                                   d.state))

    def _do_query(self, d: t.Query) -> None:
        v.check_query(self, d)
        self._outbox.append(t.Answer(wire_time(self._queue.now), {"consumed_energy": 0.0}))

    def _do_to_job_msg(self, d: t.ToJobMsg) -> None:
        v.check_to_job_msg(self, d)
        log.debug("TO_JOB_MSG to %s ignored (no profile of the simulator reads messages)",
                  d.job_id)
