"""What the embedded simulator records of each job and of the whole run.

:class:`Accounting` is the part of the engine that closes jobs: a job that stops
running releases its machines and becomes a :class:`JobRecord` (Batsim's jobs.csv row,
handed to ``on_record`` as it ends), and :meth:`Accounting.result` sums the run as
Batsim's schedule.csv does. It reads and writes the shared :class:`~.books.RunBooks`,
tells the per-instant hook (:class:`~.instant.MovingEnds`) that an end happened, and
asks the instant's message clock (:class:`~.message_clock.InstantMessages`) for the
runtime of a job killed at the instant it started.
"""

from __future__ import annotations

from collections.abc import Callable
from typing import Any

import numpy as np

from batpolicy.io.online import ExactSum
from batpolicy.io.result import NULL_RUNTIME, JobRecord, SimResult
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.simulator.books import RunBooks
from batpolicy.simulator.energy.pstates import EnergyPart
from batpolicy.simulator.engine.message_clock import InstantMessages
from batpolicy.simulator.instant import MovingEnds
from batpolicy.simulator.records import SimJob

__all__ = ["Accounting", "union_busy_time"]


def union_busy_time(records: list[JobRecord]) -> Any:
    """Machine-seconds in Batsim's COMPUTING state: per machine, the union of its jobs' runs.

    Batsim 4.2.1 counts a machine's time in a state when it leaves it
    (``Machine::update_machine_state``, ``src/machines.cpp``): a job start on a machine
    already computing adds the time since its last change to COMPUTING, and a job end
    moves it to IDLE only once no job is left on it (``update_machines_on_job_end``); so
    with compute sharing ``time_computing`` (``export.cpp``) counts each machine's busy
    time once, however many jobs share it. Runtime complexity: O(sum of allocation sizes
    x log).

    >>> from batpolicy.protocol.intervals import MachineSet
    >>> r = [JobRecord("w!a", "p", 0.0, 2, None, _SUCCESS, start=0.0, finish=10.0,
    ...                  alloc=MachineSet.span(0, 1)),
    ...      JobRecord("w!b", "p", 0.0, 1, None, _SUCCESS, start=5.0, finish=15.0,
    ...                  alloc=MachineSet.of(1))]
    >>> float(union_busy_time(r))  # machine 0: 10 s; machine 1: 0 to 15
    25.0
    """
    runs: dict[int, list[tuple[float, float]]] = {}
    for record in records:
        if record.alloc is None or record.start is None or record.finish is None:
            continue
        for m in record.alloc:
            runs.setdefault(m, []).append((record.start, record.finish))
    spans: list[tuple[float, float]] = []
    for intervals in runs.values():
        intervals.sort()
        begin, end = intervals[0]
        for lo, hi in intervals[1:]:
            if lo > end:
                spans.append((begin, end))
                begin, end = lo, hi
            elif hi > end:
                end = hi
        spans.append((begin, end))
    table = np.array(spans, dtype=np.longdouble).reshape(-1, 2)
    return (table[:, 1] - table[:, 0]).sum()  # in long double, as Batsim (export.cpp)

_REJECTED = JobState.REJECTED
_SUCCESS = JobState.COMPLETED_SUCCESSFULLY
_KILLED = JobState.COMPLETED_KILLED


class Accounting:
    """Job records and run totals (:attr:`result`, kept up to date as jobs end).

    ``keep_records`` (default): every record stays in ``result_so_far.records``; without
    it a record is handed to ``on_record`` and forgotten, and what the totals need of it
    (``schedule.csv``'s means, the machine time it spent on unavailable machines) is
    taken as it ends.
    """

    __slots__ = ("_books", "_ends", "_messages", "result_so_far", "on_record", "energy",
                 "keep_records", "_overlap", "_down_pending", "_windows_seen")

    def __init__(self, books: RunBooks, ends: MovingEnds, messages: InstantMessages,
                 result: SimResult, on_record: Callable[[JobRecord], None] | None) -> None:
        self._books = books
        self._ends = ends
        self._messages = messages
        #: The totals, updated as jobs end; :meth:`result` completes the machine times.
        self.result_so_far = result
        self.on_record = on_record
        #: The energy part with Batsim's -E (:mod:`.energy`), else None.
        self.energy: EnergyPart | None = None
        self.keep_records = True
        #: Machine-seconds jobs computed on unavailable machines (schedule.csv's
        #: time_computing leaves them out), summed as windows and records meet.
        self._overlap = ExactSum()
        #: Records that ended on machines still unavailable: (start, finish, machines),
        #: met by the windows that close later.
        self._down_pending: list[tuple[float, float, MachineSet]] = []
        self._windows_seen = 0

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
            clocks = self._messages.stopped(job.id, now, job.state is _KILLED, job.start_rank)
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
        cells = job.model.record_extra  # a job model's extra jobs.csv cells, if it has some
        # positionally (JobRecord's field order): a keyword costs the call twice as much
        record = JobRecord(job.id, job.profile, job.subtime, job.res, job.walltime, state,
                           None if runtime is None else job.start, runtime, finish, job.alloc,
                           job.metadata, job.return_code, job.fields,
                           None if cells is None else cells(job, runtime), consumed_energy)
        if self.keep_records:
            result.records.append(record)
        result.nb_records += 1
        if state is _REJECTED:
            result.nb_jobs_rejected += 1
        else:
            result.nb_jobs_finished += 1
            if state is _SUCCESS:
                result.nb_jobs_success += 1
            else:
                result.nb_jobs_killed += 1
            start = record.start
            end = start + runtime  # type: ignore[operator]
            if end > result.makespan:
                result.makespan = end
            result.schedule.add(start, runtime, job.subtime)  # type: ignore[arg-type]
            machines = self._books.machines
            if machines.windows or machines.unavailable:
                self._meet_windows(record)
        books = self._books
        books.nb_open -= 1
        books.to_delete.append(job)
        if self.on_record is not None:
            self.on_record(record)

    def _meet_windows(self, record: JobRecord) -> None:
        """Count the time ``record`` computed on machines while they were unavailable.

        Each (unavailability window, record) pair counts once, when the later of the two
        ends: the windows closed so far now (the last ones, those that closed after the
        job started), the windows still open once they close (:meth:`_new_windows`).
        Runtime complexity: O(windows met), the intervals of the allocation.
        """
        alloc, start, finish = record.alloc, record.start, record.finish
        if alloc is None or start is None or finish is None:
            return
        self._new_windows()
        windows = self._books.machines.windows
        add = self._overlap.add
        for i in range(len(windows) - 1, -1, -1):
            begin, end, down = windows[i]
            if end <= start:
                break  # windows close in time order: the earlier ones ended before
            lo, hi = max(begin, start), min(end, finish)
            if hi > lo:
                common = alloc & down
                if common:
                    add((hi - lo) * len(common))
        unavailable = self._books.machines.unavailable
        if unavailable and not alloc.isdisjoint(unavailable):
            self._down_pending.append((start, finish, alloc & MachineSet(unavailable)))
        self._overlap.maybe_fold()

    def _new_windows(self) -> None:
        """Meet the windows closed since the last call with the records pending on them."""
        windows = self._books.machines.windows
        if self._windows_seen == len(windows):
            return
        new, self._windows_seen = windows[self._windows_seen:], len(windows)
        pending = self._down_pending
        if not pending:
            return
        add = self._overlap.add
        for begin, end, down in new:
            for start, finish, machines in pending:
                lo, hi = max(begin, start), min(end, finish)
                if hi > lo:
                    common = machines & down
                    if common:
                        add((hi - lo) * len(common))
        unavailable = self._books.machines.unavailable
        self._down_pending = [p for p in pending if not p[2].isdisjoint(unavailable)]
        self._overlap.fold()

    def result(self) -> SimResult:
        """Totals of what was simulated so far (complete once the run returned).

        Runtime complexity: O(n) machines, plus O(records x windows) when machines were
        unavailable.
        """
        result = self.result_so_far
        books = self._books
        machines = books.machines
        self._new_windows()
        # long double, as Batsim's time per state (Machine::update_machine_state, export.cpp)
        busy = (union_busy_time(result.records) if machines.shared
                else machines.busy_time_exact())
        computing = busy - self._overlap.value()
        result.time_computing = float(computing)
        result.time_unavailable = machines.unavailable_time
        result.time_idle = max(float(machines.last_change_sum() - computing
                                     - machines.unavailable_time), 0.0)
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
        result.nb_jobs = result.nb_records + books.nb_open
        result.end_time = books.queue.now
        return result
