"""What the embedded simulator records of each job and of the whole run.

:class:`Accounting` is the part of the engine that closes jobs: a job that stops
running releases its machines and becomes a :class:`JobRecord` (Batsim's jobs.csv row,
handed to ``on_record`` as it ends), and :meth:`Accounting.result` sums the run as
Batsim's schedule.csv does. It reads and writes the shared :class:`~.books.Books`,
tells the per-instant hook (:class:`~.instant.MovingEnds`) that an end happened, and
asks the instant's message clock (:class:`~.message_clock.InstantMessages`) for the
runtime of a job killed at the instant it started.
"""

from __future__ import annotations

from collections.abc import Callable

from batpolicy.protocol.types import JobState
from batpolicy.io.result import NULL_RUNTIME, JobRecord, SimResult
from batpolicy.simulator.bookkeeping import SimJob
from batpolicy.simulator.books import Books
from batpolicy.simulator.energy.pstates import EnergyPart
from batpolicy.simulator.instant import MovingEnds
from batpolicy.simulator.engine.message_clock import InstantMessages

__all__ = ["Accounting"]

_REJECTED = JobState.REJECTED
_SUCCESS = JobState.COMPLETED_SUCCESSFULLY
_KILLED = JobState.COMPLETED_KILLED


class Accounting:
    """Job records and run totals (:attr:`result`, kept up to date as jobs end)."""

    __slots__ = ("_books", "_ends", "_messages", "result_so_far", "on_record", "energy")

    def __init__(self, books: Books, ends: MovingEnds, messages: InstantMessages,
                 result: SimResult, on_record: Callable[[JobRecord], None] | None) -> None:
        self._books = books
        self._ends = ends
        self._messages = messages
        #: The totals, updated as jobs end; :meth:`result` completes the machine times.
        self.result_so_far = result
        self.on_record = on_record
        #: The energy part with Batsim's -E (:mod:`.energy`), else None.
        self.energy: EnergyPart | None = None

    def finish(self, job: SimJob, now: float) -> None:
        """Bookkeeping of a job that stopped running (completed, killed, changed)."""
        books = self._books
        del books.running[job.id]
        ends = self._ends
        ends.dirty = ends.moving  # an end: the instant hook runs (.instant)
        alloc = job.alloc
        if alloc is not None:
            books.machines.release(alloc, job.start, now)
        consumed = -1.0 if self.energy is None else self.energy.job_ended(job)
        runtime = now - job.start
        if runtime == 0:
            clocks = self._messages.stopped(job.id, now, job.state is _KILLED)
            runtime = NULL_RUNTIME
            # killed at the instant it started: a few of Batsim's message times (issue 17)
            if clocks is not None and clocks[1] > clocks[0]:
                job.start, runtime = clocks[0], clocks[1] - clocks[0]
        elif job.kill_requested:
            self._messages.forget(job.id)
        self.record(job, runtime, now, consumed)

    def record(self, job: SimJob, runtime: float | None, finish: float | None,
               consumed_energy: float = -1.0) -> None:
        """The job's jobs.csv row (``runtime`` None: rejected); the job is then closed."""
        result = self.result_so_far
        state = job.state
        record = JobRecord(job.id, job.profile, job.subtime, job.res, job.walltime, state,
                           None if runtime is None else job.start, runtime, finish, job.alloc,
                           job.metadata, job.return_code, job.fields,
                           consumed_energy=consumed_energy)
        cells = getattr(job.model, "record_extra", None)
        if cells is not None:
            record.model_cells = cells(job, runtime)
        result.records.append(record)
        if state is _REJECTED:
            result.nb_jobs_rejected += 1
        else:
            result.nb_jobs_finished += 1
            if state is _SUCCESS:
                result.nb_jobs_success += 1
            else:
                result.nb_jobs_killed += 1
            end = job.start + runtime  # type: ignore[operator]
            if end > result.makespan:
                result.makespan = end
        books = self._books
        books.nb_open -= 1
        books.to_delete.append(job)
        if self.on_record is not None:
            self.on_record(record)

    def result(self) -> SimResult:
        """Totals of what was simulated so far (complete once the run returned).

        Runtime complexity: O(n) machines, plus O(records x windows) when machines were
        unavailable.
        """
        result = self.result_so_far
        books = self._books
        machines = books.machines
        overlap = 0.0
        for begin, end, down in machines.windows:
            for record in result.records:
                if record.alloc is None or record.start is None or record.finish is None:
                    continue
                lo, hi = max(begin, record.start), min(end, record.finish)
                if hi > lo:
                    common = record.alloc & down
                    if common:
                        overlap += (hi - lo) * len(common)
        result.time_computing = machines.busy_time - overlap
        result.time_unavailable = machines.unavailable_time
        result.time_idle = max(machines.last_change_sum() - result.time_computing
                               - machines.unavailable_time, 0.0)
        energy = self.energy
        if energy is not None:
            times = energy.state_time
            result.energy = True
            result.consumed_joules = energy.consumed_joules()
            result.nb_grouped_switches = energy.nb_grouped_switches
            result.nb_machine_switches = energy.nb_machine_switches
            result.time_sleeping = times["sleeping"]
            result.time_switching_off = times["switching_off"]
            result.time_switching_on = times["switching_on"]
            result.time_idle = times["idle"]
            result.time_computing = times["computing"]
        result.nb_jobs = len(result.records) + books.nb_open
        result.end_time = books.queue.now
        return result
