"""Batsim's bookkeeping of one run, shared by the simulator's parts through named fields.

:class:`RunBooks` is the Batsim side's data: its jobs (static ones not yet submitted
included), profile tables, machines, the running jobs, what is still open or pending,
and the outbox of events the server gathered for its next message to the scheduler.
The parts of the engine (:mod:`.engine`) read and write these fields, and only these;
each part keeps its own state private. :mod:`.validation` reads it as its
:class:`~batpolicy.simulator.engine.validation.BatsimView`, and job models as their
:class:`~batpolicy.simulator.jobmodels.base.ModelContext` (``speeds``, ``platform``,
:meth:`RunBooks.profile_definition`).
"""

from __future__ import annotations

import heapq
from collections.abc import Iterator, Sequence
from typing import Any

from batpolicy.io.swf_stream import StreamedJobs
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.protocol.types import JobState
from batpolicy.simulator.core import EventQueue
from batpolicy.simulator.options import SimOptions
from batpolicy.simulator.records import ProfileTable, SimJob, SimMachines
from batpolicy.simulator.static_jobs import StaticJobs

__all__ = ["RunBooks", "by_submission", "submission_order"]

_SUBMITTED = JobState.SUBMITTED


class RunBooks:
    """What Batsim knows of a run: jobs, profiles, machines, open counts, the outbox.

    ``static`` gives the static jobs not yet submitted, in submission order, as they fall
    due (:class:`~.static_jobs.StaticJobs`: a long trace's jobs are never all held);
    ``outbox`` is one list for the whole run (the driver sends and clears it), so parts
    may keep a reference to it.
    """

    __slots__ = ("queue", "options", "platform", "machines", "speeds", "jobs", "tables",
                 "running", "registered", "static", "outbox",
                 "to_delete", "nb_open", "waiters", "registration_finished", "static_done",
                 "events_done", "messages_take_time", "switching", "energy")

    def __init__(self, queue: EventQueue, options: SimOptions, platform: Platform,
                 machines: SimMachines) -> None:
        self.queue = queue
        #: Batsim's messages take time (the latency driver): no two actions end within
        #: SimGrid's 1e-9 s of each other by accident (read by the job models).
        self.messages_take_time = False
        self.options = options
        self.platform = platform  # job models read its groups and GPUs (placement)
        self.machines = machines
        #: Current machine speeds (flop/s) by machine id: the list speed changes write.
        self.speeds: list[float] = machines.speeds
        self.jobs: dict[str, SimJob] = {}
        self.tables: dict[str, ProfileTable] = {}
        self.running: dict[str, SimJob] = {}
        self.registered: set[str] = set()
        self.static = StaticJobs(())
        self.outbox: list[t.Event] = []
        self.to_delete: list[SimJob] = []
        self.nb_open = 0
        self.waiters = 0
        self.registration_finished = False
        self.static_done = True
        self.events_done = True
        #: Machines switching on or off (Batsim's -E): the run cannot end meanwhile.
        self.switching = 0
        #: The energy part with Batsim's -E (:class:`~.energy.pstates.EnergyPart`), else None:
        #: job models that run jobs as parallel tasks tell it their hosts' loads.
        self.energy: Any = None

    @property
    def now(self) -> float:
        """Batsim's current (unrounded) simulated time. Runtime complexity: O(1)."""
        return self.queue.now

    def profile_definition(self, workload: str, name: str) -> dict[str, Any]:
        """A profile as registered, even if garbage-collected since. O(1)."""
        return self.tables[workload].definition(name)

    def ever_met(self, job_id: str) -> bool:
        """Whether Batsim met this id: static jobs (even not yet submitted), registered ones."""
        return job_id in self.jobs or job_id in self.registered or self.static.met(job_id)

    def is_pending_static(self, job_id: str) -> bool:
        """Whether a static job with this id is not submitted yet. Runtime complexity: O(n)."""
        return self.static.is_pending(job_id)

    def collect(self) -> None:
        """Forget the jobs whose end was just reported; collect their profiles (§1.6)."""
        reuse = self.options.profile_reuse
        jobs, tables = self.jobs, self.tables
        for job in self.to_delete:
            jobs.pop(job.id, None)
            if not reuse:
                table = tables[job.workload]
                if job.profile not in table.collected:  # collect's own first test, no call
                    table.collect(job.profile)
        self.to_delete = []

    def can_end(self) -> bool:
        """Batsim's end: inputs done, registration finished, nothing open or pending."""
        return (self.static_done and self.events_done and self.nb_open == 0
                and self.waiters == 0 and self.switching == 0
                and (not self.options.dynamic_jobs or self.registration_finished))

    def waiting_ids(self) -> list[str]:
        """Ids of the submitted jobs never started nor rejected. Runtime complexity: O(n)."""
        return [job.id for job in self.jobs.values() if job.state is _SUBMITTED]


def submission_order(workloads: Sequence[Workload]) -> Iterator[JobSpec]:
    """Static jobs in Batsim's submission order, (subtime, full id), built as asked for.

    A streamed trace (:class:`~batpolicy.io.swf_stream.StreamedJobs`) comes in that
    order; a list is sorted (timsort: O(n) if sorted) and each job let go once taken;
    several workloads are merged, as one sort of all their jobs would order them (ids
    differ between workloads: no tie). Runtime complexity: O(n log w) for w workloads.
    """
    sources = [iter(w.jobs) if isinstance(w.jobs, StreamedJobs) else _drain(by_submission(w.jobs))
               for w in workloads]
    if len(sources) == 1:
        return sources[0]
    return heapq.merge(*sources, key=_submission_key)


def _drain(specs: list[JobSpec]) -> Iterator[JobSpec]:
    """The jobs of ``specs`` in order, each dropped from the list once yielded."""
    specs.reverse()
    pop = specs.pop
    while specs:
        yield pop()


def by_submission(specs: Sequence[JobSpec]) -> list[JobSpec]:
    """Static jobs in Batsim's submission order: (subtime, full id); timsort, O(n) if sorted."""
    return sorted(specs, key=_submission_key)


def _submission_key(job: JobSpec) -> tuple[float, str]:
    return (job.subtime, job.id)
