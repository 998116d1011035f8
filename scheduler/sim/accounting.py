"""What the embedded simulator records of each job and of the whole run.

:class:`Accounting` is mixed into :class:`~batpolicy.scheduler.sim.engine.Simulator`:
a job that stops running releases its machines and becomes a :class:`JobRecord`
(Batsim's jobs.csv row, handed to ``on_record`` as it ends), and :meth:`result` sums
the run as Batsim's schedule.csv does.
"""

from __future__ import annotations

from batpolicy.protocol.types import JobState
from batpolicy.scheduler.io.result import NULL_RUNTIME, JobRecord, SimResult
from batpolicy.scheduler.sim.bookkeeping import SimJob

_REJECTED = JobState.REJECTED
_SUCCESS = JobState.COMPLETED_SUCCESSFULLY
_KILLED = JobState.COMPLETED_KILLED


class Accounting:
    """Job records and run totals of :class:`Simulator` (a mixin; state lives in the engine)."""

    def _finish(self, job: SimJob, now: float) -> None:
        """Bookkeeping of a job that stopped running (completed, killed, changed)."""
        del self._running[job.id]
        self._dirty = self._moving  # an end: the instant hook runs (.instant)
        alloc = job.alloc
        if alloc is not None:
            self.machines.release(alloc, job.start, now)
        runtime = now - job.start
        started = self._start_rank.pop(job.id, None)
        killed_at = self._kill_rank.pop(job.id, None)
        if runtime == 0:
            runtime = NULL_RUNTIME
            if job.state is _KILLED and started is not None and started[0] == now:
                # killed at the instant it started: a few of Batsim's message times (issue 17)
                last = started[1] if killed_at is None else killed_at
                start, end = self._instant.clocks(now, started[1], last)
                if end > start:
                    job.start, runtime = start, end - start
        self._record(job, runtime, now)

    def _record(self, job: SimJob, runtime: float | None, finish: float | None) -> None:
        result = self._result
        state = job.state
        record = JobRecord(job.id, job.profile, job.subtime, job.res, job.walltime, state,
                           None if runtime is None else job.start, runtime, finish, job.alloc,
                           job.metadata, job.return_code, job.fields)
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
        self._nb_open -= 1
        self._to_delete.append(job)
        if self.on_record is not None:
            self.on_record(record)

    def result(self) -> SimResult:
        """Totals of what was simulated so far (complete after :meth:`run` returned).

        Runtime complexity: O(n) machines, plus O(records x windows) when machines were
        unavailable.
        """
        result = self._result
        machines = self.machines
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
        result.nb_jobs = len(result.records) + self._nb_open
        result.end_time = self._queue.now
        return result
