"""The embedded simulator's job starts and ends, told to a ``_schedule.trace`` writer.

Batsim's ``PajeTracer`` (``export.cpp``) hears of a job where its machines change state
(``Machines::update_machines_on_job_run`` / ``_end``) and of kills where a job's
execution returns (``jobs_execution.cpp``). :func:`attach` wraps the run's parts at the
same points, so that nothing runs per event when nobody traces:

- EXECUTE_JOB's handler (:attr:`~.decisions.DecisionApplier.handlers`): once the job has
  started, :meth:`~batpolicy.io.paje.PajeTraceWriter.job_started`;
- the job records (:attr:`~.accounting.Accounting.on_record`, called as a job stops,
  after its machines are released): ``job_ended`` for a job that ran, with Batsim's kill
  events for a job that reached its walltime (return code -1) or whose parallel task a
  KILL_JOB cancelled (-2);
- KILL_JOB's handler: which killed jobs run a parallel task now (their current task, as
  the kill's progress says; ``cancel_ptask``), the others' actors being killed without
  event.
"""

from __future__ import annotations

from typing import Any

from batpolicy.io.paje import PajeTraceWriter
from batpolicy.io.result import JobRecord
from batpolicy.protocol import types as t
from batpolicy.protocol.types import JobState
from batpolicy.simulator.books import RunBooks
from batpolicy.simulator.engine.parts import Parts

__all__ = ["PARALLEL_TASK_TYPES", "attach", "kill_cancels_parallel_task"]

#: Profile types Batsim runs as a SimGrid parallel task (``Profile::is_parallel_task``):
#: a KILL_JOB cancels the task, and the job's own actor writes the kill events.
PARALLEL_TASK_TYPES = frozenset({"parallel", "parallel_homogeneous",
                                 "parallel_homogeneous_total", "parallel_homogeneous_pfs",
                                 "data_staging"})

_WALLTIME = JobState.COMPLETED_WALLTIME_REACHED
_KILLED = JobState.COMPLETED_KILLED


def kill_cancels_parallel_task(job: Any, now: float, books: RunBooks) -> bool:
    """Whether killing ``job`` at ``now`` cancels a parallel task (its current task's type).

    A job set running by CHANGE_JOB_STATE runs nothing (no cancel).
    """
    if job.end_seq < 0:
        return False
    entry = job.model.progress(job, now, books)
    while isinstance(entry.get("current_task"), dict):
        entry = entry["current_task"]
    profile = books.profile_definition(job.workload, str(entry["profile_name"]))
    return profile.get("type") in PARALLEL_TASK_TYPES


def attach(parts: Parts, writer: PajeTraceWriter) -> None:
    """Make the run tell ``writer`` every job start, end and kill (module docstring)."""
    books, queue, decisions, accounting = parts.books, parts.queue, parts.decisions, \
        parts.accounting
    handlers = decisions.handlers
    execute, kill = handlers[t.ExecuteJob], handlers[t.KillJob]
    cancelling: set[str] = set()  # killed jobs whose parallel task the kill cancels
    machines = books.machines

    def traced_execute(d: t.ExecuteJob) -> None:
        """Start the job, then trace its machines."""
        execute(d)
        writer.job_started(d.job_id, d.alloc, queue.now)

    def traced_kill(d: t.KillJob) -> None:
        """Queue the kills; note the jobs whose parallel task they cancel."""
        before = len(decisions.kills)
        kill(d)
        now = queue.now
        for job in decisions.kills[before:]:
            if kill_cancels_parallel_task(job, now, books):
                cancelling.add(job.id)

    handlers[t.ExecuteJob] = traced_execute
    handlers[t.KillJob] = traced_kill
    inner = accounting.on_record

    def traced_record(record: JobRecord) -> None:
        """Trace the end of a job that ran, then pass the record on."""
        alloc = record.alloc
        if alloc is not None and record.finish is not None:
            state = record.final_state
            events = state is _WALLTIME or (state is _KILLED and record.job_id in cancelling)
            cancelling.discard(record.job_id)
            down = machines.unavailable
            writer.job_ended(record.job_id, alloc, record.finish,
                             unavailable=alloc & down if down else (), kill_events=events)
        if inner is not None:
            inner(record)

    accounting.on_record = traced_record
