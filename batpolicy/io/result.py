"""What a simulation leaves behind: one record per finished job, and the run's totals."""

from __future__ import annotations

from collections.abc import Mapping
from dataclasses import dataclass, field

from batpolicy.io.online import NULL_RUNTIME, ScheduleStats
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.jobfields import EMPTY_FIELDS, JobFields

__all__ = ["NULL_RUNTIME", "JobRecord", "SimResult"]



@dataclass(slots=True, eq=False)
class JobRecord:
    """One row of ``jobs.csv``: a job that completed, was killed or was rejected.

    Why this form: a finished job's facts, frozen when Batsim frees the job, in
    ``jobs.csv``'s terms; the simulator's :class:`~batpolicy.simulator.records.SimJob`
    objects are mutable and freed at the job's end, as Batsim's are.

    ``start``, ``runtime`` and ``alloc`` are ``None`` for a rejected job. ``runtime`` is
    Batsim's: ``finish - start``, or 1e-5 s for a job that computed in null time, so
    ``finish`` (the time the job was reported complete) may be ``start + runtime - 1e-5``.
    ``fields`` are the job's extra JSON fields (deadline, job type...), written as extra
    ``jobs.csv`` columns when a workload uses them.

    >>> r = JobRecord("w0!3", "p", 2.0, 1, 10.0, JobState.COMPLETED_SUCCESSFULLY,
    ...               start=4.0, runtime=5.0, finish=9.0, alloc=MachineSet.of(0))
    >>> r.name, r.workload, r.waiting_time, r.turnaround_time, r.stretch, r.success
    ('3', 'w0', 2.0, 7.0, 1.4, True)
    """

    job_id: str
    profile: str
    submission_time: float
    requested_resources: int
    walltime: float | None
    final_state: JobState
    start: float | None = None
    runtime: float | None = None
    finish: float | None = None
    alloc: MachineSet | None = None
    metadata: str = ""
    return_code: int = 0
    fields: JobFields = EMPTY_FIELDS
    #: Cells of the extra ``jobs.csv`` columns a job model fills (co-allocation penalty...).
    model_cells: Mapping[str, str] | None = None
    #: Joules the job's machines consumed while it ran (Batsim's -E), -1 without energy.
    consumed_energy: float = -1.0

    @property
    def workload(self) -> str:
        """Workload name (before ``!``)."""
        return self.job_id.split("!", 1)[0]

    @property
    def name(self) -> str:
        """Job name inside its workload, as ``jobs.csv`` writes ``job_id``."""
        return self.job_id.split("!", 1)[1]

    @property
    def success(self) -> bool:
        """True only for ``COMPLETED_SUCCESSFULLY``."""
        return self.final_state is JobState.COMPLETED_SUCCESSFULLY

    @property
    def rejected(self) -> bool:
        """True for a rejected job (no times, no allocation)."""
        return self.start is None

    @property
    def completion_time(self) -> float | None:
        """``start + runtime`` (Batsim's ``finish_time`` column)."""
        return None if self.start is None else self.start + self.runtime  # type: ignore[operator]

    @property
    def waiting_time(self) -> float | None:
        """``start - submission_time``."""
        return None if self.start is None else self.start - self.submission_time

    @property
    def turnaround_time(self) -> float | None:
        """``start + runtime - submission_time``."""
        if self.start is None:
            return None
        return self.start + self.runtime - self.submission_time  # type: ignore[operator]

    @property
    def stretch(self) -> float | None:
        """``turnaround / runtime`` (Batsim's plain slowdown)."""
        if self.start is None:
            return None
        return self.turnaround_time / self.runtime  # type: ignore[operator]


@dataclass(slots=True)
class SimResult:
    """Records in completion order, counts, machine-time totals and the run's costs.

    ``records`` holds every job's record unless the run forgets them once written
    (``Simulator.forget_records``, what ``simulate`` does: memory then stays that of the
    jobs alive); ``nb_records`` counts them either way and ``schedule`` keeps
    ``schedule.csv``'s means and maxima as they end.
    Counts follow Batsim's ``schedule.csv`` (Batsim's documented outputs): ``nb_jobs`` counts every
    submitted or registered job, rejected ones included; ``nb_jobs_killed`` every
    finished job that did not succeed (walltime and failures included).
    """

    records: list[JobRecord] = field(default_factory=list)
    nb_records: int = 0
    schedule: ScheduleStats = field(default_factory=ScheduleStats)
    nb_machines: int = 0
    #: Storage hosts (``role="storage"``): Batsim counts them in ``nb_computing_machines``.
    nb_storage_machines: int = 0
    nb_jobs: int = 0
    nb_jobs_finished: int = 0
    nb_jobs_success: int = 0
    nb_jobs_killed: int = 0
    nb_jobs_rejected: int = 0
    makespan: float = 0.0
    time_computing: float = 0.0
    time_idle: float = 0.0
    time_unavailable: float = 0.0
    nb_messages: int = 0
    scheduling_time: float = 0.0
    simulation_time: float = 0.0
    end_time: float = 0.0
    complete: bool = False
    batsim_version: str = ""
    #: Whether energy was modelled (-E); the totals below are 0 without it.
    energy: bool = False
    #: Batsim's -E totals (schedule.csv); 0 without energy.
    consumed_joules: float = 0.0
    nb_grouped_switches: int = 0
    nb_machine_switches: int = 0
    time_sleeping: float = 0.0
    time_switching_off: float = 0.0
    time_switching_on: float = 0.0

    def job(self, job_id: str) -> JobRecord:
        """The record of ``job_id`` (records kept). Runtime complexity: O(n)."""
        for record in self.records:
            if record.job_id == job_id:
                return record
        raise KeyError(job_id)
