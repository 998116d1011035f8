"""One simulation run, as ``batpolicy simulate`` and ``batpolicy fake-batsim`` make it.

:func:`run_simulation` drives a :class:`Simulator` with any scheduler callable (the
inputs come from :func:`~batpolicy.io.inputs.load_inputs`) and writes, as the
run goes:

- ``jobs.csv``: Batsim's ``_jobs.csv``, one row per job as it ends (flushed, so a run
  stopped by an error or Ctrl-C leaves its rows on disk);
- ``schedule.csv``: Batsim's ``_schedule.csv``, written at the end, also after an error;
- ``machine_states.csv``: Batsim's ``_machine_states.csv``, a row at each job start and
  end (:mod:`~batpolicy.io.machine_states`), when ``paths`` names it;
- the optional outputs whose files ``paths`` names (``OutputPaths.extra``), each written
  by its :class:`~batpolicy.simulator.outputs.base.Output` (:mod:`batpolicy.simulator.outputs`),
  e.g. ``schedule.trace``: Batsim's Pajé ``_schedule.trace``, lines at each job start and
  end (:mod:`~batpolicy.io.paje`), its end once the run is complete;
- ``metrics.json``: :func:`~batpolicy.io.metrics.run_metrics` (docs/metrics.md),
  and ``"error"`` when the run stopped on one;
- optionally the whole conversation as a msgpack transcript (``record``).

Every file is written under its name plus ``.part`` and renamed once the run ends
(:meth:`~batpolicy.io.outputs.OutputPaths.partial`), after an error too, with
``metrics.json`` last; a previous run's outputs of the same names are removed first. A
run killed outright leaves ``.part`` files only: no ``jobs.csv`` that looks complete.

Progress goes to stderr: a live bar on a terminal, a log line every few seconds
otherwise.
"""

from __future__ import annotations

import logging
import sys
import time
from collections.abc import Callable, Iterable, Mapping, Sequence
from contextlib import nullcontext
from dataclasses import dataclass
from pathlib import Path
from typing import Any

from batpolicy.io.machine_states import MachineStatesCsvWriter
from batpolicy.io.metrics import online_metrics, run_metrics, write_json
from batpolicy.io.outputs import JobsCsvWriter, OutputPaths, write_schedule_csv
from batpolicy.io.result import JobRecord, SimResult
from batpolicy.io.workload import Workload
from batpolicy.platforms.model import Platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.steady_gc import steady_gc
from batpolicy.scheduler.stop_signals import outputs_first
from batpolicy.simulator.engine.simulator import Scheduler, Simulator
from batpolicy.simulator.options import SimOptions
from batpolicy.simulator.outputs.base import Output
from batpolicy.simulator.outputs.registry import enabled_outputs

__all__ = ["RunReport", "output_layout", "run_simulation"]

log = logging.getLogger(__name__)


def output_layout(workloads: Sequence[Workload], platform: Platform, options: SimOptions
                  ) -> tuple[tuple[str, ...], dict[str, MachineSet]]:
    """What a run writes beyond Batsim's outputs, the same for ``simulate`` and campaigns.

    The ``jobs.csv`` columns after Batsim's (the workloads' job fields,
    :func:`~batpolicy.scheduler.jobfields.fields_used`, then those the run's job models add,
    e.g. the co-allocation penalty), and the machine groups (name -> machines) whose
    utilisation goes into the metrics. Runtime complexity: O(jobs).
    """
    from batpolicy.platforms.placement import platform_groups
    from batpolicy.scheduler.jobfields import fields_used
    from batpolicy.simulator.jobmodels.registry import make_job_model

    columns = list(fields_used(raw for w in workloads for raw in _raws(w)))
    for spec in (options.default_job_model, *options.job_models.values()):
        for column in make_job_model(spec).extra_columns:
            if column not in columns:
                columns.append(column)
    groups = {name: group.machines for name, group in platform_groups(platform).items()}
    return tuple(columns), groups


def _raws(workload: Workload) -> Iterable[dict[str, Any]]:
    """The jobs' raw objects; for a streamed trace one stands for all (same keys)."""
    example = getattr(workload.jobs, "raw_example", None)
    return (example,) if example is not None else (job.raw for job in workload.jobs)


class _JobProgress:
    """Jobs ended out of those known, on stderr: a rich bar on a terminal, else log lines."""

    def __init__(self, total: int, enabled: bool, every_s: float = 5.0) -> None:
        self.total = total
        self.done = 0
        self.every_s = every_s
        self._next_check = 256
        self._last = time.perf_counter()
        self._bar: Any = None
        if enabled and sys.stderr.isatty():
            from rich.progress import (
                BarColumn,
                MofNCompleteColumn,
                Progress,
                TextColumn,
                TimeElapsedColumn,
            )
            self._bar = Progress(TextColumn("simulating"), BarColumn(), MofNCompleteColumn(),
                                 TextColumn("jobs, t={task.fields[now]:.0f} s"),
                                 TimeElapsedColumn(), transient=True)
            self._task = self._bar.add_task("jobs", total=total, now=0.0)
            self._bar.start()
        self.enabled = enabled

    def job_ended(self, now: float) -> None:
        """Count one ended job; look at the clock every 256 jobs, redraw or log then."""
        self.done += 1
        if self.done < self._next_check or not self.enabled:
            return
        self._next_check = self.done + 256
        wall = time.perf_counter()
        if self._bar is not None:
            self._bar.update(self._task, completed=self.done, total=max(self.total, self.done),
                             now=now)
        elif wall - self._last >= self.every_s:
            log.info("%d/%d jobs ended, simulated time %.0f s", self.done,
                     max(self.total, self.done), now)
        else:
            return
        self._last = wall

    def close(self) -> None:
        """Remove the bar."""
        if self._bar is not None:
            self._bar.stop()
            self._bar = None


def _recording(scheduler: Scheduler, path: Path) -> tuple[Scheduler, Callable[[], None]]:
    from batpolicy.protocol.codec import reply_to_obj, request_to_obj
    from batpolicy.protocol.transcript import TranscriptWriter

    writer = TranscriptWriter(path)

    def recorded(request: t.Request) -> t.Reply:
        """Ask the scheduler; write the exchange (or the unanswered request)."""
        try:
            reply = scheduler(request)
        except BaseException:
            writer.write(request_to_obj(request), None)
            raise
        writer.write(request_to_obj(request), reply_to_obj(reply))
        return reply

    return recorded, writer.close


@dataclass(slots=True)
class RunReport:
    """What :func:`run_simulation` returns: the simulator's result and the metrics written."""

    result: SimResult
    metrics: dict[str, Any]
    paths: OutputPaths
    wall_time_s: float


def run_simulation(simulator_factory: Callable[[Callable[[JobRecord], None]], Simulator],
                   scheduler: Scheduler, paths: OutputPaths, *, nb_jobs: int = 0,
                   tau: float = 10.0, record: Path | None = None, progress: bool = True,
                   describe: Mapping[str, Any] | None = None,
                   policy_stats: Callable[[], dict[str, Any]] | None = None,
                   nb_decisions: Callable[[], int] | None = None,
                   extra_columns: tuple[str, ...] = (),
                   groups: Mapping[str, MachineSet] | None = None,
                   tune_gc: bool = True) -> RunReport:
    """Simulate to the end, writing the outputs as it goes; they are complete on error too.

    ``simulator_factory`` builds the simulator given the per-job callback (so rows reach
    ``jobs.csv`` as jobs end). ``extra_columns`` are the job fields written after
    Batsim's columns (:func:`~batpolicy.scheduler.jobfields.fields_used`); ``groups``
    (name -> machines) adds utilisation per group to the metrics. Errors are re-raised
    after the outputs are written; ``metrics.json`` then holds ``"error"`` and
    ``"complete": false``. ``tune_gc=False`` leaves the collector as it is (the
    process-wide :func:`steady_gc` is for one run at a time, not for runs that
    interleave in threads, as the episodes of a vector of Gymnasium environments do).
    """
    paths.create_parents()
    paths.clear()  # a previous run's outputs must not pass for this one's
    final, paths = paths, paths.partial()  # written as NAME.part, renamed at the end
    outputs = enabled_outputs(paths)  # the optional ones (simulator.outputs), to attach
    began = time.perf_counter()
    bar = _JobProgress(nb_jobs, progress)
    close_record: Callable[[], None] | None = None
    if record is not None:
        scheduler, close_record = _recording(scheduler, record)
    error: BaseException | None = None
    # The collector tuned for the whole run, the records' metrics included: after the loop
    # they build one outcome per job, which default thresholds rescan the heap for.
    with JobsCsvWriter(paths.jobs, extra_columns=extra_columns) as jobs, \
            (steady_gc() if tune_gc else nullcontext()):
        online: Any = None
        progress_shown = bar.enabled  # without it (--no-progress), no call per job

        def on_record(r: JobRecord) -> None:
            """Append the job's row, count it in the metrics, advance the progress."""
            jobs.write(r)
            online.add(r)
            if progress_shown:
                bar.job_ended(r.finish if r.finish is not None else r.submission_time)

        simulator = simulator_factory(on_record)
        # each record is written, counted and forgotten: memory is the jobs alive
        simulator.forget_records()
        online = online_metrics(simulator.parts.accounting.result_so_far, tau, groups,
                                copies=simulator.options.dynamic_jobs)
        states = MachineStatesCsvWriter(paths.machine_states) \
            if paths.machine_states is not None else None
        if states is not None:
            simulator.trace_machine_states(states.write_rows)
        attached: list[Output] = []
        for output in outputs:
            output.attach(simulator)
            attached.append(output)  # closed however the run stops
        try:
            simulator.run(scheduler)
        except BaseException as exc:
            error = exc
            raise
        finally:
            # however the run stopped, the outputs are written in full (a second Ctrl-C
            # or a SIGTERM now waits for them)
            with outputs_first(stopping=error is not None):
                bar.close()
                if states is not None:
                    states.close()
                if close_record is not None:
                    close_record()
                result = simulator.result()
                for output in attached:  # e.g. Batsim's Pajé trace ends only if the run did
                    output.close(simulator, error)
                wall = time.perf_counter() - began
                write_schedule_csv(paths.schedule, result)
                energy = simulator.parts.energy
                if energy is not None:  # Batsim's -E traces, beside jobs.csv
                    energy.write(str(final.jobs)[:-len("jobs.csv")])
                metrics = run_metrics(result, wall, tau, error, describe, policy_stats,
                                      nb_decisions, groups, online)
                model_stats = simulator.job_model_stats()
                if model_stats:  # e.g. the co-allocation models' mean penalty
                    metrics["job_model_stats"] = model_stats
                write_json(paths.metrics, metrics)
                jobs.close()
                paths.finish(final)  # metrics.json last: it says the run ended
    return RunReport(result, metrics, final, wall)
