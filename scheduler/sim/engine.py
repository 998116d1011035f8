"""The embedded simulator: Batsim 4.2.1 at the message level, without Batsim.

:class:`Simulator` emits the typed :class:`~batpolicy.protocol.types.Request` messages
Batsim would send, hands each to a scheduler callable, and applies the typed
:class:`~batpolicy.protocol.types.Reply` decisions at that time, checking them as
Batsim does (:mod:`.validation`). The scheduler may be ``Dispatcher(policy).handle``, a
socket round-trip to any Batsim scheduler, or a recorded conversation.

Messages, as Batsim 4.2.1 sends them on a zero-latency platform:

1. SIMULATION_BEGINS alone, at time 0;
2. then, instant by instant, every event of the instant in one message, in the order of
   :mod:`.core`'s priorities, stamped with the instant rounded to 6 decimals (Batsim's
   JSON writer); the reply's decisions are applied at that instant;
3. what the decisions cause at the same instant (JOB_COMPLETED(COMPLETED_KILLED) then
   JOB_KILLED for a KILL_JOB; the JOB_SUBMITTED acknowledging a REGISTER_JOB; the
   completion of a job of zero length; RESOURCE_STATE_CHANGED) in a follow-up message
   at the same time;
4. SIMULATION_ENDS alone once nothing can happen any more (PROTOCOL.md §1.10).

Batsim sometimes splits one instant over two messages (issue #67, PROTOCOL.md §1.9);
the simulator never does, which is the faithful reading of "everything of one instant
is batched" and changes nothing for a scheduler that decides after each message.
"""

from __future__ import annotations

import logging
import math
import os
import time as _time
from collections.abc import Callable, Iterable, Sequence
from itertools import chain
from typing import Any

from batpolicy import __version__
from batpolicy.errors import ConfigError, InputError, InvalidDecision
from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.io.model import JobSpec, Workload
from batpolicy.scheduler.sim.accounting import Accounting
from batpolicy.scheduler.sim.actors import (
    EndOfInput,
    ExternalEventOccurs,
    JobEnd,
    Resume,
    SpeedChange,
    Submitter,
)
from batpolicy.scheduler.sim.bookkeeping import Machines, ProfileTable, SimJob, referenced_profiles
from batpolicy.scheduler.sim.core import (
    COMPLETION,
    DECISION,
    END_OF_INPUT,
    EXTERNAL,
    SUBMISSION,
    EventQueue,
)
from batpolicy.scheduler.sim.decisions import DecisionHandlers
from batpolicy.scheduler.sim.instant import InstantModel, MovingEnds
from batpolicy.scheduler.sim.message_clock import InstantMessages
from batpolicy.scheduler.sim.models import JobModel, make_job_model
from batpolicy.scheduler.sim.options import SimOptions
from batpolicy.scheduler.sim.result import JobRecord, SimResult
from batpolicy.scheduler.sim.wire import as_machine_set, wire_json, wire_time

__all__ = ["Scheduler", "Simulator"]

log = logging.getLogger(__name__)

#: The scheduler side: one Batsim message in, one reply out.
Scheduler = Callable[[t.Request], t.Reply]

_RUNNING = JobState.RUNNING
_SUBMITTED = JobState.SUBMITTED
_KILLED = JobState.COMPLETED_KILLED
_REJECTED = JobState.REJECTED
_SUCCESS = JobState.COMPLETED_SUCCESSFULLY


def _default_model(options: SimOptions, workloads: Sequence[Workload]) -> str:
    """The default job model: ``ptask`` for Batsim JSON workloads, else the option's.

    ``ptask`` runs Batsim's jobs as SimGrid parallel tasks (data moves, executors mapped
    onto one machine) and the others in closed form.
    """
    if options.default_job_model == "profile" and (options.compute_sharing or any(
            (w.source or "").endswith(".json") for w in workloads)):
        return "ptask"
    return options.default_job_model


def _submission_key(job: JobSpec) -> tuple[float, str]:
    return (job.subtime, job.id)


class Simulator(DecisionHandlers, Accounting, MovingEnds):
    """Batsim 4.2.1 without Batsim: workloads, a platform, external events, Batsim's flags.

    ``on_record`` is called with every :class:`JobRecord` as the job ends (e.g.
    :meth:`JobsCsvWriter.write`), so outputs stay on disk if a run stops on an error;
    :meth:`result` gives the totals at any time, after an error included. A simulator
    runs once.

    Runtime complexity: O(log n) heap work per event, O(intervals) per allocation
    check, plus the scheduler's own cost.
    """

    def __init__(self, workloads: Sequence[Workload], platform: Platform, *,
                 events: Iterable[Any] = (), options: SimOptions | None = None,
                 on_record: Callable[[JobRecord], None] | None = None) -> None:
        self.options = options if options is not None else SimOptions()
        self.on_record = on_record
        machines = list(platform.machines)
        if self.options.mmax is not None:
            machines = machines[:self.options.mmax]
        if not machines:
            raise ConfigError("the platform has no compute machine")
        self._machine_info = machines
        self._storage_info = list(platform.storage)
        self.machines = Machines([m.name for m in machines], [float(m.speed) for m in machines])
        self._queue = EventQueue()
        self.jobs: dict[str, SimJob] = {}
        self.tables: dict[str, ProfileTable] = {}
        self.platform = platform  # job models read its groups and GPUs (placement)
        self._workload_paths: dict[str, str] = {}
        self._begin_profiles: dict[str, dict[str, Any]] = {}
        self._models: dict[str, JobModel] = {}
        self._default_model = make_job_model(_default_model(self.options, workloads))
        for name, spec in self.options.job_models.items():
            self._models[name] = make_job_model(spec)
        self._named: dict[str, JobModel] = {}  # per-job ``job_model`` fields
        instant = self.options.instant_model
        if instant is not None and not isinstance(instant, InstantModel):
            raise ConfigError(f"instant_model must be an InstantModel, got {instant!r}")
        self._init_moving_ends([instant, self._default_model, *self._models.values()])
        self._static = self._load_workloads(workloads)
        self._static_ids: set[str] | None = None
        self._registered: set[str] = set()
        self._cursor = 0
        self._external_events = sorted(events, key=lambda e: e.timestamp)  # stable: file order
        self.registration_finished = False
        self._static_done = not workloads
        self._events_done = not self._external_events
        self._outbox: list[t.Event] = []
        self._kills: list[SimJob] = []
        self._kill_groups: list[int] = []
        self._to_delete: list[SimJob] = []
        self._running: dict[str, SimJob] = {}
        self._nb_open = 0
        self._waiters = 0
        self._handlers: dict[type, Callable[[Any], None]] = {
            t.ExecuteJob: self._do_execute, t.RejectJob: self._do_reject,
            t.KillJob: self._do_kill, t.CallMeLater: self._do_call_me_later,
            t.RegisterJob: self._do_register_job, t.RegisterProfile: self._do_register_profile,
            t.RegistrationFinished: self._do_registration_finished,
            t.ContinueRegistration: self._do_continue_registration,
            t.SetJobMetadata: self._do_metadata, t.ChangeJobState: self._do_change_job_state,
            t.SetResourceState: self._do_set_resource_state, t.Query: self._do_query,
            t.Answer: lambda d: None, t.ToJobMsg: self._do_to_job_msg,
        }
        self._instant = InstantMessages(platform)
        self._start_rank: dict[str, tuple[float, int]] = {}
        self._kill_rank: dict[str, int] = {}
        self._bye_pending = False
        self._advancing = False
        self._result = SimResult(nb_machines=self.machines.n, batsim_version=(
            self.options.batsim_version or f"batpolicy-{__version__}"))
        self._started = False
        self._seed_queue()

    # ---------------------------------------------------------------- construction
    def _load_workloads(self, workloads: Sequence[Workload]) -> list[JobSpec]:
        for workload in workloads:
            name = workload.name
            if name in self.tables:
                raise ConfigError(f"two workloads are named '{name}'")
            if "!" in name:
                raise ConfigError(f"workload name '{name}' may not contain '!'")
            used = {job.profile for job in workload.jobs}
            for model, profile in self._models_used(workload):
                try:
                    model.check(name, profile, workload.profiles)
                except InputError as exc:
                    exc.path = exc.path or workload.source
                    raise
            # Batsim drops the profiles no job uses when it loads a workload.
            referenced = referenced_profiles(used, workload.profiles)
            self.tables[name] = ProfileTable(referenced)
            # Batsim's order is a hash map's; ours is sorted, so that runs are reproducible.
            self._begin_profiles[name] = {key: wire_json(referenced[key])
                                          for key in sorted(referenced)}
            self._workload_paths[name] = os.path.abspath(workload.source) if workload.source \
                else name
        jobs = [wl.jobs for wl in workloads]
        if len(jobs) == 1:
            return sorted(jobs[0], key=_submission_key)  # timsort: O(n) when already sorted
        return sorted(chain.from_iterable(jobs), key=_submission_key)

    def _model_for(self, workload: str) -> JobModel:
        return self._models.get(workload, self._default_model)

    def _named_model(self, name: str) -> JobModel:
        """The model a job's ``job_model`` field names (one instance per name)."""
        model = self._named.get(name)
        if model is None:
            model = self._named[name] = make_job_model(name)
            if isinstance(model, InstantModel):
                self._instant_models.append(model)
                self._moving = True
        return model

    def _model_of(self, job: SimJob) -> JobModel:
        """A job's model: its ``job_model`` field, else its workload's, else the default."""
        name = job.fields.job_model
        if name is None:
            return self._models.get(job.workload, self._default_model)
        return self._named_model(name)

    def _models_used(self, workload: Workload) -> list[tuple[JobModel, str]]:
        """Each (model, profile) pair the workload's jobs use; an unknown model is an error."""
        default = self._model_for(workload.name)
        pairs: dict[tuple[str | None, str], JobSpec] = {}
        for job in workload.jobs:
            pairs.setdefault((job.raw.get("job_model"), job.profile), job)
        out = []
        for (name, profile), job in pairs.items():
            try:
                model = default if name is None else self._named_model(str(name))
            except ConfigError as exc:
                raise InputError(str(exc), path=workload.source, job=job.id,
                                 field="job_model") from None
            out.append((model, profile))
        return out

    def _seed_queue(self) -> None:
        queue = self._queue
        if self._static:
            queue.schedule(Submitter(self), SUBMISSION, at=max(self._static[0].subtime, 0.0))
        elif not self._static_done:
            queue.schedule(EndOfInput(self, t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value),
                           END_OF_INPUT)
        for event in self._external_events:
            queue.schedule(ExternalEventOccurs(self, event), EXTERNAL,
                           at=max(float(event.timestamp), 0.0))
        if self._external_events:
            last = max(float(self._external_events[-1].timestamp), 0.0)
            queue.schedule(EndOfInput(self, t.NotifyType.NO_MORE_EXTERNAL_EVENT_TO_OCCUR.value),
                           END_OF_INPUT, at=last)

    def schedule_speed_change(self, at: float, machines: MachineSet, speed: float) -> None:
        """Make ``machines`` compute at ``speed`` flop/s from time ``at`` on.

        Running jobs there are re-planned by their job model (only models that depend on
        speed move). Not a Batsim event: the scheduler is not told.
        """
        if not self.machines.exist(machines) or speed <= 0:
            raise ConfigError(f"speed change of machines {machines} to {speed}: machines must "
                              "exist and the speed be > 0")
        self._queue.schedule(SpeedChange(self, as_machine_set(machines), float(speed)), EXTERNAL,
                             at=at)

    # ---------------------------------------------------------------- read-only views
    @property
    def now(self) -> float:
        """Batsim's current (unrounded) simulated time. Runtime complexity: O(1)."""
        return self._queue.now

    @property
    def speeds(self) -> list[float]:
        """Current machine speeds (flop/s), by machine id (read by job models)."""
        return self.machines.speeds

    def job_model_stats(self) -> dict[str, Any]:
        """Statistics of the job models that keep some (co-allocation penalty...)."""
        out: dict[str, Any] = {}
        for model in {id(m): m for m in (self._default_model, *self._models.values())}.values():
            stats = getattr(model, "stats", None)
            if stats is not None:
                out.update(stats())
        return out

    def profile_definition(self, workload: str, name: str) -> dict[str, Any]:
        """A profile as registered, even if garbage-collected since. O(1)."""
        return self.tables[workload].definition(name)

    def ever_met(self, job_id: str) -> bool:
        """Whether Batsim met this id: static jobs (even not yet submitted), registered ones."""
        if job_id in self.jobs or job_id in self._registered:
            return True
        if self._static_ids is None:
            self._static_ids = {job.id for job in self._static}
        return job_id in self._static_ids

    def is_pending_static(self, job_id: str) -> bool:
        """Whether a static job with this id is not submitted yet. Runtime complexity: O(n)."""
        return any(job.id == job_id for job in self._static[self._cursor:])

    # ---------------------------------------------------------------- the message loop
    def run(self, scheduler: Scheduler) -> SimResult:
        """Simulate until SIMULATION_ENDS, asking ``scheduler`` at every message.

        Raises :class:`InvalidDecision` where Batsim would abort, and when the
        simulation can never end (Batsim would wait forever).
        """
        if self._started:
            raise ConfigError("a Simulator runs once; build a new one")
        self._started = True
        began = _time.perf_counter()
        queue = self._queue
        try:
            self._instant.tick(0.0)  # SUBMITTER_HELLO
            self._exchange(scheduler, [self._simulation_begins()], first=True)
            while True:
                now = queue.now
                queue.fire_due(now)  # what the last decisions caused at this instant
                if self._outbox:
                    self._exchange(scheduler, self._outbox)
                    continue
                if self._dirty:  # once per instant, after its starts and ends (.instant)
                    self._end_of_instant()
                    continue
                if self._can_end():
                    self._end(scheduler)
                    break
                instant = queue.peek()
                if instant == math.inf:
                    raise self._stuck()
                queue.fire_due(instant)
        finally:
            self._result.simulation_time += _time.perf_counter() - began
        return self.result()

    def _exchange(self, scheduler: Scheduler, events: list[t.Event], first: bool = False
                  ) -> None:
        """Send one message, delete the jobs it reports (Batsim 4), apply the reply.

        Each decision applies at its timestamp (the reply's ``now`` if it has none) or
        at Batsim's clock if that is later; Batsim is ready again at the reply's ``now``.
        Events happening meanwhile wait for the next message, as in Batsim.

        ``first``: the reply to SIMULATION_BEGINS. Batsim's server receives the job
        submitter's SUBMITTER_HELLO, then this reply's first message (its first decision,
        or SCHED_READY), and only then the jobs submitted at t = 0 (the submitter sends
        them once its HELLO is received): they come between the first and second
        decisions (issue 17, case 2: batsched ``submitter``).
        """
        queue = self._queue
        now = queue.now
        request = t.Request(wire_time(now), tuple(events))
        self._outbox = []
        if self._to_delete:
            self._collect()
        began = _time.perf_counter()
        reply = scheduler(request)
        self._result.scheduling_time += _time.perf_counter() - began
        self._result.nb_messages += 1
        if not isinstance(reply, t.Reply):
            raise InvalidDecision(f"the scheduler answered {type(reply).__name__}, not a Reply "
                                  f"(message #{self._result.nb_messages}, t={now})")
        handlers = self._handlers
        for decision in reply.decisions:
            handler = handlers.get(type(decision))
            if handler is None:
                raise InvalidDecision(f"{type(decision).__name__} is not a decision Batsim "
                                      f"accepts (t={queue.now})")
            stamp = decision.timestamp
            if stamp is None:
                stamp = reply.now
            if stamp > queue.now:
                self._instant.sleep_until(queue.now, stamp)
                self._advance_to(stamp)
            if self._instant.tick(queue.now) == 2 and first:
                self._submit_at_start()
            handler(decision)
        if reply.now > queue.now:
            self._advance_to(reply.now)
        elif self._kills:
            self._perform_kills()
        if self._bye_pending:  # issue 17, case 4: received before what the reply causes
            queue.schedule(EndOfInput(self, t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value),
                           SUBMISSION)
        if self._instant.tick(queue.now) <= 2 and first:  # SCHED_READY
            self._submit_at_start()

    def _advance_to(self, at: float) -> None:
        """Let simulated time run until ``at`` (Batsim sleeping before a decision)."""
        if self._kills:
            self._perform_kills()
        resume = Resume(self)
        self._queue.schedule(resume, DECISION, at=at)
        queue = self._queue
        self._advancing = True
        while not resume.fired:
            if self._dirty and queue.peek() > queue.now:
                self._end_of_instant()
            queue.step()
        self._advancing = False

    def _simulation_begins(self) -> t.SimulationBegins:
        """SIMULATION_BEGINS as Batsim 4.2.1 sends it for the platform file.

        Each machine with its host properties (``role`` included) and the properties of
        the zones around it; storage hosts after the compute ones.
        """
        def _info(index: int, machine: Any) -> t.ResourceInfo:
            properties = dict(machine.properties)
            properties.setdefault("role", "")
            return t.ResourceInfo(index, machine.name, "idle", properties,
                                  dict(machine.zone_properties))

        resources = tuple(_info(i, m) for i, m in enumerate(self._machine_info))
        storage = tuple(_info(len(resources) + i, m) for i, m in enumerate(self._storage_info))
        return t.SimulationBegins(
            timestamp=0.0, nb_resources=len(resources) + len(storage),
            nb_compute_resources=len(resources), nb_storage_resources=len(storage),
            allow_compute_sharing=self.options.compute_sharing, allow_storage_sharing=True,
            config=self.options.config(), compute_resources=resources,
            storage_resources=storage,  # Batsim keeps workloads in a std::map: sorted by name
            workloads={name: self._workload_paths[name] for name in sorted(self._workload_paths)},
            profiles={name: dict(self._begin_profiles[name])
                      for name in sorted(self._begin_profiles)})

    def _can_end(self) -> bool:
        """PROTOCOL.md §1.10: inputs done, registration finished, nothing open or pending."""
        return (self._static_done and self._events_done and self._nb_open == 0
                and self._waiters == 0
                and (not self.options.dynamic_jobs or self.registration_finished))

    def _end(self, scheduler: Scheduler) -> None:
        now = wire_time(self._queue.now)
        began = _time.perf_counter()
        reply = scheduler(t.Request(now, (t.SimulationEnds(now),)))
        self._result.scheduling_time += _time.perf_counter() - began
        self._result.nb_messages += 1
        if not isinstance(reply, t.Reply) or reply.decisions:
            raise InvalidDecision("the reply to SIMULATION_ENDS must hold no event "
                                  f"(t={self._queue.now})")
        self._result.complete = True

    def _stuck(self) -> InvalidDecision:
        reasons = []
        waiting = [job.id for job in self.jobs.values() if job.state is _SUBMITTED]
        if waiting:
            reasons.append(f"{len(waiting)} submitted job(s) never started nor rejected "
                           f"({', '.join(waiting[:5])}{', ...' if len(waiting) > 5 else ''})")
        endless = [job.id for job in self._running.values() if job.end_seq < 0]
        if endless:
            reasons.append(f"job(s) set RUNNING by CHANGE_JOB_STATE never completed "
                           f"({', '.join(endless[:5])})")
        if self.options.dynamic_jobs and not self.registration_finished:
            reasons.append("dynamic jobs are enabled and NOTIFY registration_finished was "
                           "never sent")
        return InvalidDecision(f"nothing can happen any more at t={self._queue.now} but the "
                               f"simulation cannot end: {'; '.join(reasons) or 'unknown'} "
                               "(Batsim would wait forever)",
                               job_id=waiting[0] if waiting else None)

    def _collect(self) -> None:
        """Forget the jobs whose end was just reported; collect their profiles (§1.6)."""
        reuse = self.options.profile_reuse
        jobs, tables = self.jobs, self.tables
        for job in self._to_delete:
            jobs.pop(job.id, None)
            if not reuse:
                tables[job.workload].collect(job.profile)
        self._to_delete = []

    # ---------------------------------------------------------------- heap events
    def on_submission_time(self) -> None:
        """Submit every static job due now, in (subtime, full id) order (PROTOCOL.md §1.5).

        Runtime complexity: O(k) for k jobs submitted.
        """
        queue = self._queue
        now = queue.now
        static, i, n = self._static, self._cursor, len(self._static)
        while i < n and static[i].subtime <= now:
            i += 1
        if i == self._cursor:
            return  # already submitted by _submit_at_start
        self.submit_static(static[self._cursor:i])
        self._cursor = i
        if i < n:
            queue.schedule(Submitter(self), SUBMISSION, at=static[i].subtime)
        else:
            queue.schedule(EndOfInput(self, t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value),
                           END_OF_INPUT)

    def _submit_at_start(self) -> None:
        """The jobs due at t = 0, if the submitter has not sent them yet."""
        if self._queue.now == 0.0 and self._cursor == 0 and self._static \
                and self._static[0].subtime <= 0.0:
            self.on_submission_time()

    def submit_static(self, specs: Sequence[JobSpec]) -> None:
        """Batsim's server receiving static jobs: JOB_SUBMITTED for each, now. O(len(specs))."""
        stamp = wire_time(self._queue.now)
        tables, jobs, out = self.tables, self.jobs, self._outbox
        forward = self.options.forward_profiles
        models = self._models
        default = self._default_model
        for spec in specs:
            workload = spec.id.split("!", 1)[0]
            data = tables[workload].definition(spec.profile)
            job = SimJob(spec.id, workload, spec.subtime, spec.res, spec.walltime, spec.profile,
                         data, spec.raw)
            job.model = models.get(workload, default) if job.fields.job_model is None \
                else self._named_model(job.fields.job_model)
            jobs[spec.id] = job
            out.append(t.JobSubmitted(stamp, spec.id, wire_json(spec.raw),
                                      wire_json(data) if forward else None))
        self._nb_open += len(specs)

    def on_end_of_input(self, kind: str) -> None:
        """A submitter is done: NOTIFY ``kind`` (no more static job / external event).

        Batsim's job submitter says goodbye once its last batch is received; if that
        batch is the last event of its instant and the scheduler is ready, Batsim has
        already sent it, so the NOTIFY comes in the next message, at the same time
        (issue 17, case 4); otherwise it joins the instant's message.
        """
        if kind == t.NotifyType.NO_MORE_STATIC_JOB_TO_SUBMIT.value:
            out = self._outbox
            if not self._bye_pending and not self._advancing and out \
                    and isinstance(out[-1], t.JobSubmitted):
                self._bye_pending = True
                return
            if self._bye_pending:  # received before what the reply caused: first
                self._bye_pending = False
                self._static_done = True
                self._outbox.insert(0, t.Notify(wire_time(self._queue.now), kind))
                return
            self._static_done = True
        else:
            self._events_done = True
        self._outbox.append(t.Notify(wire_time(self._queue.now), kind))

    def on_call(self) -> None:
        """A CALL_ME_LATER is due: REQUESTED_CALL."""
        self._waiters -= 1
        self._outbox.append(t.RequestedCall(wire_time(self._queue.now)))

    def on_external_event(self, event: Any) -> None:
        """Machine (un)availability (§1.14): applied and notified; others forwarded if asked.

        Running jobs keep their machines when these become unavailable.
        """
        now = self._queue.now
        stamp = wire_time(now)
        kind = event.type
        if kind in ("machine_unavailable", "machine_available"):
            machines = as_machine_set(event.resources)
            where = {"path": getattr(event, "source", None), "line": getattr(event, "line", None)}
            if not self.machines.exist(machines):
                raise InputError(f"external event at t={event.timestamp} names machines "
                                 f"{machines} outside the platform (0-{self.machines.n - 1})",
                                 field="resources", **where)
            if kind == "machine_unavailable":
                wrong = self.machines.set_unavailable(machines, now)
                rule = "already unavailable"
            else:
                wrong = self.machines.set_available(machines, now)
                rule = "not unavailable"
            if wrong:
                raise InputError(f"external event {kind} at t={event.timestamp}: machines "
                                 f"{wrong} are {rule} (Batsim aborts)", field="resources",
                                 **where)
            self._outbox.append(t.Notify(stamp, f"event_{kind}", machines))
        elif self.options.forward_unknown_events:
            self._outbox.append(t.Notify(stamp, str(kind), None, wire_json(dict(event.data))))
        else:
            log.debug("external event %r at t=%s not forwarded (forward_unknown_events is off)",
                      kind, event.timestamp)

    def on_speed_change(self, machines: MachineSet, speed: float) -> None:
        """Set the machines' speed and re-plan the jobs running there. O(running jobs)."""
        speeds = self.machines.speeds
        for m in machines:
            speeds[m] = speed
        for job in list(self._running.values()):
            if job.end_seq >= 0 and job.alloc is not None and job.alloc & machines:
                self.reschedule(job)

    def reschedule(self, job: SimJob) -> None:
        """Ask the job's model for its new end and move its completion there.

        The old heap entry stays and is skipped when popped. Runtime complexity: O(log n).
        """
        end = job.model.on_change(job, self._queue.now, self)
        if end != job.end:
            self._dirty = self._moving
            job.end = end
            job.end_seq = self._queue.schedule(JobEnd(self, job), COMPLETION, at=end)

    def on_job_end(self, job: SimJob) -> None:
        """A job reaches its planned end: JOB_COMPLETED with the model's outcome. O(intervals)."""
        now = self._queue.now
        job.state = job.outcome
        job.end_seq = -1
        self._finish(job, now)
        self._outbox.append(t.JobCompleted(wire_time(now), job.id, job.state, job.return_code,
                                           job.alloc))  # type: ignore[arg-type]
