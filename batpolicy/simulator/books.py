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

from collections.abc import Iterable, Sequence
from typing import Any

from pyroaring import BitMap

from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.protocol.types import JobState
from batpolicy.io.workload import JobSpec
from batpolicy.simulator.records import SimMachines, ProfileTable, SimJob
from batpolicy.simulator.core import EventQueue
from batpolicy.simulator.options import SimOptions

__all__ = ["RunBooks", "by_submission"]

_SUBMITTED = JobState.SUBMITTED


class RunBooks:
    """What Batsim knows of a run: jobs, profiles, machines, open counts, the outbox.

    ``static`` holds the static jobs in submission order, ``cursor`` the first not yet
    submitted (:meth:`forget_submitted` drops those before it, keeping their ids in a
    compact set, so that a long trace's submitted jobs are not held); ``outbox`` is one list for the whole run (the driver sends and clears
    it), so parts may keep a reference to it.
    """

    __slots__ = ("queue", "options", "platform", "machines", "speeds", "jobs", "tables",
                 "running", "registered", "static", "cursor", "_static_ids", "outbox",
                 "to_delete", "nb_open", "waiters", "registration_finished", "static_done",
                 "events_done", "messages_take_time", "switching", "energy", "_submitted")

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
        self.static: list[JobSpec] = []
        self.cursor = 0
        self._static_ids: set[str] | None = None
        self._submitted = MetIds()  # ids of the static jobs dropped from ``static``
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
        if job_id in self.jobs or job_id in self.registered or job_id in self._submitted:
            return True
        if self._static_ids is None:
            self._static_ids = {job.id for job in self.static}
        return job_id in self._static_ids

    def forget_submitted(self, at_least: int = 4096) -> None:
        """Drop the static jobs already submitted from ``static`` (once ``at_least`` are).

        Their ids stay met (:meth:`ever_met`). Runtime complexity: O(len(static)) for a
        C-level move, every ``at_least`` submissions.
        """
        cursor = self.cursor
        if cursor < at_least:
            return
        static = self.static
        if self._static_ids is None:
            self._submitted.update(spec.id for spec in static[:cursor])
        del static[:cursor]
        self.cursor = 0

    def is_pending_static(self, job_id: str) -> bool:
        """Whether a static job with this id is not submitted yet. Runtime complexity: O(n)."""
        return any(job.id == job_id for job in self.static[self.cursor:])

    def collect(self) -> None:
        """Forget the jobs whose end was just reported; collect their profiles (§1.6)."""
        reuse = self.options.profile_reuse
        jobs, tables = self.jobs, self.tables
        for job in self.to_delete:
            jobs.pop(job.id, None)
            if not reuse:
                tables[job.workload].collect(job.profile)
        self.to_delete = []

    def can_end(self) -> bool:
        """Batsim's end: inputs done, registration finished, nothing open or pending."""
        return (self.static_done and self.events_done and self.nb_open == 0
                and self.waiters == 0 and self.switching == 0
                and (not self.options.dynamic_jobs or self.registration_finished))

    def waiting_ids(self) -> list[str]:
        """Ids of the submitted jobs never started nor rejected. Runtime complexity: O(n)."""
        return [job.id for job in self.jobs.values() if job.state is _SUBMITTED]


class MetIds:
    """A set of job ids ``workload!name`` in little memory: names that are integers
    (an SWF trace's job numbers) as one bitmap per workload, the others as strings.

    >>> ids = MetIds()
    >>> ids.update(["w0!3", "w0!x", "w1!07"])
    >>> "w0!3" in ids, "w0!4" in ids, "w0!x" in ids, "w1!07" in ids, "w1!7" in ids
    (True, False, True, True, False)
    """

    __slots__ = ("_numbers", "_others")

    def __init__(self) -> None:
        self._numbers: dict[str, BitMap] = {}
        self._others: set[str] = set()

    def update(self, ids: Iterable[str]) -> None:
        """Add ids."""
        numbers, others = self._numbers, self._others
        for job_id in ids:
            workload, _, name = job_id.partition("!")
            if name.isdigit() and (name == "0" or name[0] != "0") and len(name) < 10:
                bits = numbers.get(workload)
                if bits is None:
                    bits = numbers[workload] = BitMap()
                bits.add(int(name))
            else:
                others.add(job_id)

    def __contains__(self, job_id: object) -> bool:
        if not isinstance(job_id, str):
            return False
        if job_id in self._others:
            return True
        workload, _, name = job_id.partition("!")
        bits = self._numbers.get(workload)
        return bits is not None and name.isdigit() and (name == "0" or name[0] != "0") \
            and len(name) < 10 and int(name) in bits


def by_submission(specs: Sequence[JobSpec]) -> list[JobSpec]:
    """Static jobs in Batsim's submission order: (subtime, full id); timsort, O(n) if sorted."""
    return sorted(specs, key=_submission_key)


def _submission_key(job: JobSpec) -> tuple[float, str]:
    return (job.subtime, job.id)
