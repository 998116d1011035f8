"""How the embedded simulator applies each decision of a reply, as Batsim 4.2.1 does.

:class:`DecisionApplier` is the part of the engine that applies decisions: one
handler per decision type (Batsim's protocol: decisions, :attr:`DecisionApplier.handlers`), each
validated first by :mod:`.validation` (where Batsim aborts) and then applied to
Batsim's bookkeeping (:class:`~.books.RunBooks`), through the parts that own the rest: job
starts through :class:`~.instant.MovingEnds`, job ends through
:class:`~.accounting.Accounting`, job models through :class:`~.jobmodels.choice.ModelChoice`.
The driver decides *when* each decision applies; kills wait until it calls
:meth:`DecisionApplier.perform_kills` (Batsim's killer acts once the reply is read).
"""

from __future__ import annotations

import logging
from collections.abc import Callable
from typing import Any

from batpolicy.errors import ConfigError, InputError, InvalidDecision
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.jobfields import JobFieldError, parse_job_fields
from batpolicy.simulator.actors import Reactions, Waiter
from batpolicy.simulator.books import RunBooks
from batpolicy.simulator.core import CALL
from batpolicy.simulator.energy.host_energy import profile_load
from batpolicy.simulator.energy.pstates import EnergyPart
from batpolicy.simulator.engine import validation as v
from batpolicy.simulator.engine.accounting import Accounting
from batpolicy.simulator.engine.message_clock import InstantMessages
from batpolicy.simulator.instant import MovingEnds
from batpolicy.simulator.jobmodels.choice import ModelChoice
from batpolicy.simulator.json_quirks import round_progress, wire_json, wire_time
from batpolicy.simulator.records import ProfileTable, SimJob

__all__ = ["MIN_WAIT", "DecisionApplier"]

log = logging.getLogger(__name__)

_RUNNING = JobState.RUNNING
_KILLED = JobState.COMPLETED_KILLED
_REJECTED = JobState.REJECTED
_SUCCESS = JobState.COMPLETED_SUCCESSFULLY
#: Batsim rounds CALL_ME_LATER waits shorter than this up to it (``waiter_process``).
MIN_WAIT = 1e-5


#: Profile types Batsim runs as a SimGrid parallel task (``execute_parallel_task``).
_PTASK_TYPES = frozenset({"parallel", "parallel_homogeneous", "parallel_homogeneous_total",
                          "parallel_homogeneous_pfs", "data_staging"})


def kill_return_code(books: Any, workload: str, progress: Any) -> int:
    """JOB_COMPLETED's ``return_code`` of a job the scheduler killed.

    Batsim 4.2.1's ``killer_process`` cancels the job's running parallel task if it has
    one (``cancel_ptask``): its executor catches the ``CancelException`` and returns -2
    (``execute_parallel_task``), which becomes the job's return code. Otherwise (a
    delay, a usage trace's ranks) it kills the actors and the job keeps its initial
    ``return_code = -1`` (``jobs.hpp``). The running task is the innermost of the job's
    progress.

    >>> class RunBooks:
    ...     def profile_definition(self, workload, name):
    ...         return {"d": {"type": "delay"}, "p": {"type": "parallel"}}[name]
    >>> seq = {"profile_name": "s", "current_task_index": 1,
    ...        "current_task": {"profile_name": "p", "progress": 0.25}}
    >>> kill_return_code(RunBooks(), "w0", seq), kill_return_code(RunBooks(), "w0", {
    ...     "profile_name": "d", "progress": 0.5})
    (-2, -1)
    """
    while isinstance(progress, dict) and isinstance(progress.get("current_task"), dict):
        progress = progress["current_task"]
    name = progress.get("profile_name") if isinstance(progress, dict) else None
    if name is None or books is None:
        return -1
    try:
        kind = books.profile_definition(workload, name).get("type")
    except KeyError:
        return -1
    return -2 if kind in _PTASK_TYPES else -1


class DecisionApplier:
    """Applies each decision of a reply to Batsim's bookkeeping, as Batsim 4.2.1 does.

    ``waiters`` is who a CALL_ME_LATER's wake-up calls back (the driver).
    """

    __slots__ = ("_books", "_queue", "_ends", "_accounting", "_models", "_messages",
                 "handlers", "kills", "_kill_groups", "waiters", "energy", "checked")

    def __init__(self, books: RunBooks, ends: MovingEnds, accounting: Accounting,
                 models: ModelChoice, messages: InstantMessages) -> None:
        self._books = books
        self._queue = books.queue
        self._ends = ends
        self._accounting = accounting
        self._models = models
        self._messages = messages
        self.kills: list[SimJob] = []  # asked, not yet performed
        self._kill_groups: list[int] = []
        self.waiters: Reactions | None = None
        #: The energy part with Batsim's -E (:mod:`.energy`), else None.
        self.energy: EnergyPart | None = None
        #: True while the driver applies a reply the scheduler itself checked against the
        #: very message it answers, nothing having happened since
        #: (:meth:`checked_by_scheduler`): a plain EXECUTE_JOB is then not checked again.
        self.checked = False
        #: Decision type -> its handler (a type Batsim does not accept has none).
        self.handlers: dict[type, Callable[[Any], None]] = {
            t.ExecuteJob: self._do_execute, t.RejectJob: self._do_reject,
            t.KillJob: self._do_kill, t.CallMeLater: self._do_call_me_later,
            t.RegisterJob: self._do_register_job, t.RegisterProfile: self._do_register_profile,
            t.RegistrationFinished: self._do_registration_finished,
            t.ContinueRegistration: self._do_continue_registration,
            t.SetJobMetadata: self._do_metadata, t.ChangeJobState: self._do_change_job_state,
            t.SetResourceState: self._do_set_resource_state, t.Query: self._do_query,
            t.Answer: lambda d: None, t.ToJobMsg: self._do_to_job_msg,
        }

    def apply(self, decision: t.Decision) -> None:
        """Apply one decision now (its handler); InvalidDecision if Batsim refuses its type."""
        handler = self.handlers.get(type(decision))
        if handler is None:
            raise InvalidDecision(f"{type(decision).__name__} is not a decision Batsim "
                                  f"accepts (t={self._queue.now})")
        handler(decision)

    @staticmethod
    def checked_by_scheduler(scheduler: Any) -> bool:
        """Whether ``scheduler`` checks each reply as Batsim would, against its message.

        That is an in-process :class:`~batpolicy.scheduler.dispatch.Dispatcher`'s
        ``handle`` (its ``checks_replies``): its checker applies to the state the messages
        fed the rules of :mod:`batpolicy.scheduler.rules`, the same rules
        :func:`~.validation.check_execute` applies to Batsim's books, which hold the same
        facts when the reply applies at once. Any other scheduler (a socket, a recorded
        conversation, a wrapped handle) is checked here in full. O(1).
        """
        owner = getattr(scheduler, "__self__", None)
        return getattr(owner, "checks_replies", False) is True and \
            getattr(scheduler, "__func__", None) is getattr(type(owner), "handle", None)

    def _do_execute(self, d: t.ExecuteJob) -> None:
        books = self._books
        # A plain start the scheduler checked (self.checked): the same rules, not run twice
        job = books.jobs.get(d.job_id) if self.checked else None
        if job is None or d.mapping is not None or d.storage_mapping is not None \
                or d.additional_io_job is not None:
            job = v.check_execute(books, d)  # where Batsim aborts
        now = self._queue.now
        alloc = d.alloc
        if d.additional_io_job is not None:
            self._io_job(job, d)
        energy = self.energy
        if energy is not None:
            energy.check_execute(job.id, alloc)
        books.machines.occupy(alloc, now)
        job.state = _RUNNING
        job.alloc = alloc
        job.mapping = d.mapping
        job.storage_mapping = d.storage_mapping
        job.start = now
        books.running[job.id] = job
        messages = self._messages  # its rank(now), inline: the message the job starts at
        job.start_rank = messages.count if now == messages.at else 0
        self._ends.start(job, now)
        if energy is not None:
            load = job.model.host_load
            energy.job_started(job, load(job, books) if load is not None
                               else profile_load(job, books, books.speeds))

    def _io_job(self, job: SimJob, d: t.ExecuteJob) -> None:
        """``additional_io_job``: checked, its new profile added, kept for the job model."""
        name, io_alloc, profile = v.check_io_job(self._books, d, job)
        if profile is not None:
            self._books.tables[job.workload].add(name, profile)
        job.io_job = (name, io_alloc)

    def _do_reject(self, d: t.RejectJob) -> None:
        job = v.check_reject(self._books, d)
        job.state = _REJECTED
        self._accounting.record(job, None, None)

    def _do_kill(self, d: t.KillJob) -> None:
        """Queue the kills; Batsim's killer acts once the whole reply is read."""
        messages = self._messages
        rank = messages.rank(self._queue.now)
        for job in v.check_kill(self._books, d):
            job.kill_requested = True
            messages.kill_asked(job.id, rank)
            self.kills.append(job)
        self._kill_groups.append(len(self.kills))

    def perform_kills(self) -> None:
        """Kill, then acknowledge each KILL_JOB: JOB_COMPLETED per really killed job, JOB_KILLED."""
        now = self._queue.now
        stamp = wire_time(now)
        outbox = self._books.outbox
        finish = self._accounting.finish
        books = self._books
        begin = 0
        for end in self._kill_groups:
            group = self.kills[begin:end]
            begin = end
            if not group:
                continue  # every job of this KILL_JOB was already being killed: no killer
            progress: dict[str, Any] = {}
            for job in group:
                if job.state is not _RUNNING:
                    continue  # completed before the kill: listed, no progress
                if job.end_seq >= 0:
                    progress[job.id] = round_progress(job.model.progress(job, now, books))
                else:
                    progress[job.id] = {"profile_name": job.profile, "progress": 0.0}
                code = kill_return_code(books, job.workload, progress[job.id])
                job.state = _KILLED
                job.return_code = code
                job.end_seq = -1
                finish(job, now)
                outbox.append(t.JobCompleted(stamp, job.id, _KILLED, code,
                                             job.alloc if job.alloc is not None
                                             else MachineSet()))
            outbox.append(t.JobKilled(stamp, tuple(j.id for j in group), progress))
        self.kills = []
        self._kill_groups = []

    def _do_call_me_later(self, d: t.CallMeLater) -> None:
        books = self._books
        v.check_call_me_later(books, d)
        books.waiters += 1
        self._queue.schedule(Waiter(self.waiters), CALL, max(d.at - self._queue.now, MIN_WAIT))

    def _do_register_profile(self, d: t.RegisterProfile) -> None:
        books = self._books
        v.check_register_profile(books, d)
        table = books.tables.get(d.workload_name)
        if table is None:
            table = books.tables[d.workload_name] = ProfileTable()
        profiles = dict(table.definitions)
        profiles[d.profile_name] = dict(d.profile)
        try:
            self._models.for_workload(d.workload_name).check(d.workload_name, d.profile_name,
                                                             profiles)
        except InputError as exc:
            raise v.fail("REGISTER_PROFILE", str(exc), self._queue.now) from None
        table.add(d.profile_name, dict(d.profile))

    def _do_register_job(self, d: t.RegisterJob) -> None:
        books = self._books
        desc = v.check_register_job(books, d)
        now = self._queue.now
        workload = d.job_id.split("!", 1)[0]
        walltime = desc.get("walltime", -1)
        profile = str(desc["profile"])
        try:
            job = SimJob(d.job_id, workload, float(desc["subtime"]), int(desc["res"]),
                         None if walltime == -1 else float(walltime), profile,
                         books.tables[workload].definition(profile), desc, dynamic=True,
                         fields=parse_job_fields(desc))
        except JobFieldError as exc:
            raise InvalidDecision(f"REGISTER_JOB at t={now}: {exc}", job_id=d.job_id) from None
        try:
            job.model = self._models.of(job)
        except ConfigError as exc:
            raise InvalidDecision(f"REGISTER_JOB at t={now}: {exc}", job_id=d.job_id) from None
        books.jobs[d.job_id] = job
        books.registered.add(d.job_id)
        books.nb_open += 1
        options = books.options
        if options.acknowledge_dynamic_jobs:  # Batsim's job object has the full id
            ack = {**desc, "id": d.job_id} if "id" in desc else desc
            books.outbox.append(t.JobSubmitted(
                wire_time(now), d.job_id, wire_json(ack),
                wire_json(job.profile_data) if options.forward_profiles else None))

    def _do_registration_finished(self, d: t.RegistrationFinished) -> None:
        v.check_registration_notify(self._books, "registration_finished")
        self._books.registration_finished = True

    def _do_continue_registration(self, d: t.ContinueRegistration) -> None:
        v.check_registration_notify(self._books, "continue_registration")
        self._books.registration_finished = False

    def _do_metadata(self, d: t.SetJobMetadata) -> None:
        v.check_metadata(self._books, d).metadata = d.metadata

    def _do_change_job_state(self, d: t.ChangeJobState) -> None:
        """Batsim's bookkeeping only: nothing starts, a running job's execution is stopped."""
        job = v.check_change_job_state(self._books, d)
        now = self._queue.now
        target = d.job_state
        if target is _RUNNING:
            job.state = _RUNNING
            job.start = now
            job.end_seq = -1
            self._books.running[job.id] = job
        elif target is _REJECTED:
            job.state = _REJECTED
            self._accounting.record(job, None, None)
        else:
            job.state = target
            job.return_code = -1 if target is not _SUCCESS else 0
            job.end_seq = -1
            self._accounting.finish(job, now)

    def _do_set_resource_state(self, d: t.SetResourceState) -> None:
        v.check_set_resource_state(self._books, d)
        try:
            target = int(d.state)
        except ValueError:
            raise v.fail("SET_RESOURCE_STATE", f"state {d.state!r} is not a pstate number",
                         self._queue.now, resources=d.resources) from None
        self.energy.request(d.resources, target)  # type: ignore[union-attr]  # -E checked

    def _do_query(self, d: t.Query) -> None:
        v.check_query(self._books, d)
        self._books.outbox.append(t.Answer(wire_time(self._queue.now), {
            "consumed_energy": self.energy.total()}))  # type: ignore[union-attr]

    def _do_to_job_msg(self, d: t.ToJobMsg) -> None:
        v.check_to_job_msg(self._books, d)
        log.debug("TO_JOB_MSG to %s ignored (no profile of the simulator reads messages)",
                  d.job_id)
