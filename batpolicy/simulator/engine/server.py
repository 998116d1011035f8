"""Batsim's server: what it does on receiving its actors' messages, whatever the driver.

:class:`Server` is the part both drivers share (:mod:`.zero_latency`, :mod:`.latency`):
it turns static jobs into JOB_SUBMITTED, applies external events and speed changes,
closes a job that reaches its planned end, writes SIMULATION_BEGINS and talks to the
scheduler (one message out, one reply in, timed). *When* each of these happens is the
driver's business; the server reads and writes :class:`~.books.RunBooks` and hands job
ends to :class:`~.accounting.Accounting`.
"""

from __future__ import annotations

import logging
import os
from collections.abc import Callable, Sequence
from time import perf_counter
from typing import Any

from batpolicy.errors import ConfigError, InputError, InvalidDecision
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import Reply
from batpolicy.simulator.actors import SpeedChange
from batpolicy.simulator.books import RunBooks
from batpolicy.simulator.core import EXTERNAL
from batpolicy.simulator.engine.accounting import Accounting
from batpolicy.simulator.instant import MovingEnds
from batpolicy.simulator.jobmodels.choice import ModelChoice
from batpolicy.simulator.json_quirks import (
    as_machine_set,
    batsim_reads_reply,
    wire_json,
    wire_time,
)
from batpolicy.simulator.records import ProfileTable, SimJob, referenced_profiles

__all__ = ["Scheduler", "Server"]

log = logging.getLogger(__name__)

#: The scheduler side: one Batsim message in, one reply out.
Scheduler = Callable[[t.Request], t.Reply]


class Server:
    """Batsim's server actor: submissions, external events, job ends, the scheduler talk."""

    __slots__ = ("_books", "_models", "_accounting", "_ends", "_platform", "_machine_info",
                 "_workload_paths", "_begin_profiles", "on_submit", "ends_acknowledged")

    def __init__(self, books: RunBooks, models: ModelChoice, accounting: Accounting,
                 ends: MovingEnds, platform: Platform, machine_info: list[Any]) -> None:
        self._books = books
        self._models = models
        self._accounting = accounting
        self._ends = ends
        self._platform = platform
        self._machine_info = machine_info
        self._workload_paths: dict[str, str] = {}
        self._begin_profiles: dict[str, dict[str, Any]] = {}
        #: ``on_submit(n)``: ``n`` static jobs were just submitted (a tap, see
        #: :meth:`~.simulator.Simulator.tap_submissions`); None: nobody listens.
        self.on_submit: Callable[[int], None] | None = None
        #: The ``now`` of the scheduler's reply to SIMULATION_ENDS (None: not sent yet).
        self.ends_acknowledged: float | None = None

    def load(self, workloads: Sequence[Workload]) -> None:
        """Load the workloads as Batsim does (their jobs: :func:`~.books.submission_order`).

        Checks that each job's model runs its profile; keeps only the profiles jobs use.
        """
        tables = self._books.tables
        for workload in workloads:
            name = workload.name
            if name in tables:
                raise ConfigError(f"two workloads are named '{name}'")
            if "!" in name:
                raise ConfigError(f"workload name '{name}' may not contain '!'")
            # a streamed trace's profiles are those its jobs use: no pass over them
            used = set(workload.profiles) if hasattr(workload.jobs, "examples") else \
                {job.profile for job in workload.jobs}
            self._models.check(workload)
            # Batsim drops the profiles no job uses when it loads a workload.
            referenced = referenced_profiles(used, workload.profiles)
            tables[name] = ProfileTable(referenced)
            # Batsim's order is a hash map's; ours is sorted, so that runs are reproducible.
            self._begin_profiles[name] = {key: wire_json(referenced[key])
                                          for key in sorted(referenced)}
            self._workload_paths[name] = os.path.abspath(workload.source) if workload.source \
                else name

    # ------------------------------------------------------------ what arrives
    def submit_static(self, specs: Sequence[JobSpec]) -> None:
        """Batsim's server receiving static jobs: JOB_SUBMITTED for each, now. O(len(specs))."""
        books = self._books
        stamp = wire_time(books.queue.now)
        tables, jobs, out = books.tables, books.jobs, books.outbox
        forward = books.options.forward_profiles
        models = self._models
        by_workload, default = models.by_workload, models.default
        for spec in specs:
            workload = spec.id.split("!", 1)[0]
            data = tables[workload].definitions[spec.profile]  # definition(), without its call
            fields = spec.parsed  # spec.fields, without the property's call once parsed
            job = SimJob(spec.id, workload, spec.subtime, spec.res, spec.walltime, spec.profile,
                         data, spec.raw, fields=spec.fields if fields is None else fields)
            job.model = by_workload.get(workload, default) if job.fields.job_model is None \
                else models.named(job.fields.job_model)
            jobs[spec.id] = job
            raw = spec.raw if spec.wired else wire_json(spec.raw)  # wired: as Batsim writes it
            out.append(t.JobSubmitted(stamp, spec.id, raw, wire_json(data) if forward else None))
        books.nb_open += len(specs)
        if self.on_submit is not None:
            self.on_submit(len(specs))

    def external_event(self, event: Any) -> None:
        """Machine (un)availability (§1.14): applied and notified; others forwarded if asked.

        Running jobs keep their machines when these become unavailable.
        """
        books = self._books
        now = books.queue.now
        stamp = wire_time(now)
        kind = event.type
        machines_of = books.machines
        if kind in ("machine_unavailable", "machine_available"):
            machines = as_machine_set(event.resources)
            where = {"path": getattr(event, "source", None), "line": getattr(event, "line", None)}
            if not machines_of.exist(machines):
                raise InputError(f"external event at t={event.timestamp} names machines "
                                 f"{machines} outside the platform (0-{machines_of.n - 1})",
                                 field="resources", **where)
            if kind == "machine_unavailable":
                wrong = machines_of.set_unavailable(machines, now)
                rule = "already unavailable"
            else:
                wrong = machines_of.set_available(machines, now)
                rule = "not unavailable"
            if wrong:
                raise InputError(f"external event {kind} at t={event.timestamp}: machines "
                                 f"{wrong} are {rule} (Batsim aborts)", field="resources",
                                 **where)
            books.outbox.append(t.Notify(stamp, f"event_{kind}", machines))
        elif books.options.forward_unknown_events:
            books.outbox.append(t.Notify(stamp, str(kind), None, wire_json(dict(event.data))))
        else:
            log.debug("external event %r at t=%s not forwarded (forward_unknown_events is off)",
                      kind, event.timestamp)

    def schedule_speed_change(self, at: float, machines: MachineSet, speed: float) -> None:
        """Make ``machines`` compute at ``speed`` flop/s from time ``at`` on (see Simulator)."""
        books = self._books
        if not books.machines.exist(machines) or speed <= 0:
            raise ConfigError(f"speed change of machines {machines} to {speed}: machines must "
                              "exist and the speed be > 0")
        books.queue.schedule(SpeedChange(self, as_machine_set(machines), float(speed)),
                             EXTERNAL, at=at)

    def on_speed_change(self, machines: MachineSet, speed: float) -> None:
        """Set the machines' speed and re-plan the jobs running there. O(running jobs)."""
        speeds = self._books.speeds
        for m in machines:
            speeds[m] = speed
        reschedule = self._ends.reschedule
        for job in list(self._books.running.values()):
            if job.end_seq >= 0 and job.alloc is not None and job.alloc & machines:
                reschedule(job)

    def job_end(self, job: SimJob) -> None:
        """A job reaches its planned end: JOB_COMPLETED with the model's outcome. O(intervals)."""
        books = self._books
        now = books.queue.now
        job.state = job.outcome
        job.end_seq = -1
        self._accounting.finish(job, now)
        stamp = now if type(now) is float and now.is_integer() else wire_time(now)  # inline
        books.outbox.append(t.JobCompleted(stamp, job.id, job.state, job.return_code,
                                           job.alloc))  # type: ignore[arg-type]

    # ------------------------------------------------------------ the scheduler
    def simulation_begins(self) -> t.SimulationBegins:
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
        storage = tuple(_info(len(resources) + i, m)
                        for i, m in enumerate(self._platform.storage))
        paths, profiles = self._workload_paths, self._begin_profiles
        return t.SimulationBegins(
            timestamp=0.0, nb_resources=len(resources) + len(storage),
            nb_compute_resources=len(resources), nb_storage_resources=len(storage),
            allow_compute_sharing=self._books.options.compute_sharing,
            allow_storage_sharing=True,
            config=self._books.options.config(), compute_resources=resources,
            storage_resources=storage,  # Batsim keeps workloads in a std::map: sorted by name
            workloads={name: paths[name] for name in sorted(paths)},
            profiles={name: dict(profiles[name]) for name in sorted(profiles)})

    def ask(self, scheduler: Scheduler, request: t.Request) -> t.Reply:
        """Send one message (deleting the jobs it reports, Batsim 4) and check the reply."""
        books = self._books
        if books.to_delete:
            books.collect()
        result = self._accounting.result_so_far
        began = perf_counter()
        reply = scheduler(request)
        result.scheduling_time += perf_counter() - began
        result.nb_messages += 1
        if not isinstance(reply, Reply):
            raise InvalidDecision(f"the scheduler answered {type(reply).__name__}, not a Reply "
                                  f"(message #{result.nb_messages}, t={books.queue.now})")
        return batsim_reads_reply(reply)  # Batsim's RapidJSON reading of the times

    def end(self, scheduler: Scheduler) -> None:
        """SIMULATION_ENDS: the reply must hold nothing; the run is complete."""
        books = self._books
        now = wire_time(books.queue.now)
        result = self._accounting.result_so_far
        began = perf_counter()
        reply = scheduler(t.Request(now, (t.SimulationEnds(now),)))
        result.scheduling_time += perf_counter() - began
        result.nb_messages += 1
        if not isinstance(reply, t.Reply) or reply.decisions:
            raise InvalidDecision("the reply to SIMULATION_ENDS must hold no event "
                                  f"(t={books.queue.now})")
        self.ends_acknowledged = batsim_reads_reply(reply).now
        result.complete = True

    def stuck(self) -> InvalidDecision:
        """The error of a run where nothing can happen any more but that cannot end."""
        books = self._books
        reasons = []
        waiting = books.waiting_ids()
        if waiting:
            reasons.append(f"{len(waiting)} submitted job(s) never started nor rejected "
                           f"({', '.join(waiting[:5])}{', ...' if len(waiting) > 5 else ''})")
        endless = [job.id for job in books.running.values() if job.end_seq < 0]
        if endless:
            reasons.append(f"job(s) set RUNNING by CHANGE_JOB_STATE never completed "
                           f"({', '.join(endless[:5])})")
        if books.options.dynamic_jobs and not books.registration_finished:
            reasons.append("dynamic jobs are enabled and NOTIFY registration_finished was "
                           "never sent")
        return InvalidDecision(f"nothing can happen any more at t={books.queue.now} but the "
                               f"simulation cannot end: {'; '.join(reasons) or 'unknown'} "
                               "(Batsim would wait forever)",
                               job_id=waiting[0] if waiting else None)
