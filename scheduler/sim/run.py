"""One simulation run, as ``batpolicy simulate`` and ``batpolicy fake-batsim`` make it.

:func:`load_inputs` reads workloads (Batsim JSON or SWF, named ``w0``, ``w1``, ... in the
order given, as Batsim names its ``-w`` workloads), the platform (SimGrid XML,
``nb_res`` identical machines, or the size an SWF header gives) and ``--events`` files;
with no workload it takes the bundled default (:data:`DEFAULT_WORKLOAD` on
:data:`DEFAULT_PLATFORM`). :func:`run_simulation` drives a :class:`Simulator` with any
scheduler callable and writes, as the run goes:

- ``jobs.csv``: Batsim's ``_jobs.csv``, one row per job as it ends (flushed, so a run
  stopped by an error or Ctrl-C leaves its rows on disk);
- ``schedule.csv``: Batsim's ``_schedule.csv``, written at the end, also after an error;
- ``metrics.json``: :func:`~batpolicy.scheduler.metrics.compute_metrics` over the user
  jobs (a killed-and-resubmitted job counts once), the policy's own ``stats()`` under
  ``"policy_stats"``, the run's costs, and ``"error"`` when the run stopped on one;
- optionally the whole conversation as a msgpack transcript (``record``).

Progress goes to stderr: a live bar on a terminal, a log line every few seconds
otherwise.
"""

from __future__ import annotations

import json
import logging
import math
import os
import sys
import time
from collections import Counter
from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass, replace
from importlib import resources
from pathlib import Path
from typing import Any

from batpolicy.errors import ConfigError, InputError
from batpolicy.platforms.model import Platform
from batpolicy.platforms.xml import read_platform
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.io import read_batsim_workload, read_events, read_swf, workload_format
from batpolicy.scheduler.io.events import ExternalEvent
from batpolicy.scheduler.io.model import Workload
from batpolicy.scheduler.io.outputs import JobsCsvWriter, write_schedule_csv
from batpolicy.scheduler.io.transform import TransformSpec, apply
from batpolicy.scheduler.metrics import JobOutcome, compute_metrics, merge_copies, parent_of
from batpolicy.scheduler.sim.engine import Scheduler, Simulator
from batpolicy.scheduler.sim.options import SimOptions
from batpolicy.scheduler.sim.result import JobRecord, SimResult
from batpolicy.scheduler.steady_gc import steady_gc

__all__ = ["DEFAULT_PLATFORM", "DEFAULT_WORKLOAD", "InputSpec", "OutputPaths", "bundled",
           "load_inputs", "run_simulation"]

log = logging.getLogger(__name__)

#: Bundled inputs of ``batpolicy simulate`` without arguments (files of ``batpolicy/data``).
DEFAULT_WORKLOAD = "example_workload_hpc_seed1_jobs250.json"
DEFAULT_PLATFORM = "zero_lat_cluster128.xml"
_KILLED = (JobState.COMPLETED_KILLED, JobState.COMPLETED_WALLTIME_REACHED)


def bundled(name: str) -> Path:
    """Path of a file shipped in ``batpolicy/data`` (installed as package data)."""
    path = Path(str(resources.files("batpolicy") / "data" / name))
    if not path.is_file():
        raise ConfigError(f"bundled file {name!r} is missing from {path.parent}: "
                          "reinstall batpolicy")
    return path


@dataclass(frozen=True, slots=True)
class InputSpec:
    """What to simulate: files and the SWF cleaning options (see :func:`read_swf`)."""

    workloads: tuple[str, ...] = ()
    platform: str | None = None
    nb_res: int | None = None
    events: tuple[str, ...] = ()
    lenient: bool = False
    max_jobs: int | None = None
    start: float | None = None
    end: float | None = None
    status_filter: frozenset[int] | None = None
    transform: TransformSpec = TransformSpec()  # --load, --weeks, --sample: after the above
    size: str = "requested"  # SWF: which processor count is a job's size (read_swf's size)
    extra_machines: float | None = None  # grow N identical machines to N + ceil(F*N)


def read_workload(path: str, name: str, spec: InputSpec) -> Workload:
    """One workload file read with ``spec``'s selection (SWF options, window, first jobs)."""
    if workload_format(path) == "swf":
        return read_swf(path, name, lenient=spec.lenient, max_jobs=spec.max_jobs,
                        start=spec.start, end=spec.end, keep_wait=spec.transform.weeks is not None,
                        size=spec.size,
                        status_filter=set(spec.status_filter) if spec.status_filter else None)
    workload = read_batsim_workload(path, name, lenient=spec.lenient)
    if spec.start is not None or spec.end is not None:
        lo = -math.inf if spec.start is None else spec.start
        hi = math.inf if spec.end is None else spec.end
        workload.jobs = [j for j in workload.jobs if lo <= j.subtime < hi]
    if spec.max_jobs is not None:
        del workload.jobs[spec.max_jobs:]
    return workload


#: Reads one workload file: ``(path, name, spec) -> Workload``; the result is not mutated.
WorkloadReader = Callable[[str, str, "InputSpec"], Workload]


def load_inputs(spec: InputSpec, read: WorkloadReader | None = None,
                ) -> tuple[list[Workload], Platform, list[ExternalEvent]]:
    """Workloads, platform and external events of a run; errors name file, line, field.

    ``read`` reads one workload file (default: its format's reader, with ``spec``'s
    selection); a campaign passes a cached one, so many runs on one trace read it once.
    """
    read = read or read_workload
    if spec.max_jobs is not None and spec.max_jobs < 0:
        # checked here for every format: on a JSON workload ``del jobs[-5:]`` would
        # silently drop the *last* five jobs
        raise ConfigError(f"--max-jobs must be >= 0, got {spec.max_jobs}")
    paths = list(spec.workloads)
    platform_path = spec.platform
    if not paths:
        paths = [str(bundled(DEFAULT_WORKLOAD))]
        if platform_path is None and spec.nb_res is None:
            platform_path = str(bundled(DEFAULT_PLATFORM))
        log.info("no workload given: bundled %s on %s", DEFAULT_WORKLOAD,
                 Path(platform_path).name if platform_path else f"{spec.nb_res} machines")
    if platform_path is not None and spec.nb_res is not None:  # before reading anything
        raise ConfigError("give either a platform file or a number of machines, not both")
    if platform_path is not None and spec.extra_machines is not None:
        raise ConfigError("--extra-machines grows a platform of identical machines "
                          "(--nb-res or the SWF header), not a platform file")
    with steady_gc():  # a few objects per job: no young collection every 700 of them
        workloads = [read(p, f"w{i}", spec) for i, p in enumerate(paths)]
    if platform_path is not None:
        platform = read_platform(platform_path)
    elif spec.nb_res is not None:
        if spec.nb_res <= 0:
            raise ConfigError(f"the number of machines must be positive, got {spec.nb_res}")
        platform = Platform.homogeneous(spec.nb_res)
    else:
        sizes = [w.nb_res for w in workloads if w.nb_res]
        if len(sizes) != len(workloads):
            raise ConfigError("no platform: give a platform file (-p) or a number of "
                              "machines (--nb-res); only a Batsim JSON workload with nb_res "
                              "or an SWF trace with MaxProcs/MaxNodes in its header sizes "
                              "the platform itself")
        widest = max(workloads, key=lambda w: w.nb_res or 0)
        platform = Platform.homogeneous(widest.nb_res)
        log.info("platform: %d identical machines (%s)", widest.nb_res, _size_origin(widest))
    # the jobs that cannot fit go first (lenient: dropped and counted), before the weeks'
    # utilisation is measured on the original machines; then the transforms
    workloads = [apply(_checked_fits(w, platform.nb_machines, spec.lenient), spec.transform,
                       nb_res=platform.nb_machines) for w in workloads]
    for w in workloads:
        if w.skipped:
            log.info("%s: %d jobs; skipped or adjusted: %s", w.source, len(w.jobs),
                     ", ".join(f"{k} {n}" for k, n in sorted(w.skipped.items())))
    if spec.extra_machines is not None:
        platform = Platform.homogeneous(_grown(platform.nb_machines, spec.extra_machines))
        log.info("platform grown to %d identical machines (--extra-machines %g)",
                 platform.nb_machines, spec.extra_machines)
    events: list[ExternalEvent] = []
    for path in spec.events:
        events.extend(read_events(path))
    return workloads, platform, events


def _size_origin(workload: Workload) -> str:
    """Where a workload's platform size comes from, for the log.

    >>> _size_origin(Workload("w0", [], {}, nb_res=4, source="w.json"))
    'nb_res of w.json'
    >>> _size_origin(Workload("w0", [], {}, nb_res=100, source="KTH.swf.gz"))
    'the header of KTH.swf.gz'
    """
    source = workload.source or workload.name
    swf = source.lower().endswith((".swf", ".swf.gz"))
    return f"the header of {source}" if swf else f"nb_res of {source}"


def _grown(nb_machines: int, fraction: float) -> int:
    """``nb_machines`` + ⌈fraction·nb_machines⌉ (rounded to 9 decimals first: 0.15·20 is 3).

    >>> _grown(20, 0.15), _grown(100, 0.0)
    (23, 100)
    """
    if not (math.isfinite(fraction) and fraction >= 0):
        raise ConfigError(f"--extra-machines must be a finite fraction >= 0, got {fraction}")
    return nb_machines + math.ceil(round(fraction * nb_machines, 9))


def _checked_fits(workload: Workload, nb_machines: int, lenient: bool) -> Workload:
    """A job wider than the platform is a broken input: one error, or dropped and counted.

    Batsim itself accepts such a job and leaves it to the scheduler (every policy of ours
    rejects it); ``simulate`` stops on it instead, as a researcher asking for this
    platform most likely gave the wrong one, unless ``lenient``.
    """
    wide = [job for job in workload.jobs if job.res > nb_machines]
    if not wide:
        return workload
    if not lenient:
        job = wide[0]
        raise InputError(f"asks for {job.res} machines but the platform has {nb_machines} "
                         f"({len(wide)} such job(s)); --lenient drops them and counts them",
                         path=workload.source, job=job.id, field="res")
    log.warning("%s: dropped %d job(s) larger than the platform's %d machines",
                workload.source, len(wide), nb_machines)
    skipped = Counter(workload.skipped)
    skipped["dropped_larger_than_platform"] += len(wide)
    return replace(workload, jobs=[job for job in workload.jobs if job.res <= nb_machines],
                   skipped=skipped)  # a new workload: the one read may be a cached one


def output_layout(workloads: Sequence[Workload], platform: Platform, options: SimOptions
                  ) -> tuple[tuple[str, ...], dict[str, MachineSet]]:
    """What a run writes beyond Batsim's outputs, the same for ``simulate`` and campaigns.

    The ``jobs.csv`` columns after Batsim's (the workloads' job fields,
    :func:`~batpolicy.scheduler.jobfields.fields_used`, then those the run's job models add,
    e.g. the co-allocation penalty), and the machine groups (name -> machines) whose
    utilisation goes into the metrics. Runtime complexity: O(jobs).
    """
    from batpolicy.scheduler.jobfields import fields_used
    from batpolicy.scheduler.placement import platform_groups
    from batpolicy.scheduler.sim.models import make_job_model

    columns = list(fields_used(job.raw for w in workloads for job in w.jobs))
    for spec in (options.default_job_model, *options.job_models.values()):
        for column in getattr(make_job_model(spec), "extra_columns", ()):
            if column not in columns:
                columns.append(column)
    groups = {name: group.machines for name, group in platform_groups(platform).items()}
    return tuple(columns), groups


@dataclass(frozen=True, slots=True)
class OutputPaths:
    """Where a run writes; :meth:`in_dir` (``DIR/jobs.csv``...) or Batsim's ``-e PREFIX``."""

    jobs: Path
    schedule: Path
    metrics: Path

    @classmethod
    def in_dir(cls, directory: str | os.PathLike[str]) -> OutputPaths:
        """``jobs.csv``, ``schedule.csv`` and ``metrics.json`` in ``directory``."""
        d = Path(directory)
        return cls(d / "jobs.csv", d / "schedule.csv", d / "metrics.json")

    @classmethod
    def with_prefix(cls, prefix: str) -> OutputPaths:
        """Batsim's naming: ``PREFIX_jobs.csv``, ``PREFIX_schedule.csv``, ``..._metrics.json``."""
        return cls(Path(f"{prefix}_jobs.csv"), Path(f"{prefix}_schedule.csv"),
                   Path(f"{prefix}_metrics.json"))

    def create_parents(self) -> None:
        """Make the output folders (an unwritable place fails here, before simulating)."""
        for path in (self.jobs, self.schedule, self.metrics):
            try:
                path.parent.mkdir(parents=True, exist_ok=True)
            except OSError as exc:
                raise ConfigError(f"cannot create output folder {path.parent}: "
                                  f"{exc.strerror or exc}") from None


class _Progress:
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


def _outcomes(records: Sequence[JobRecord]) -> list[JobOutcome]:
    """One outcome per user job: a killed job's copies merged into it (:func:`merge_copies`).

    The (id, metadata, outcome) triples :func:`merge_copies` takes are built only when a
    record's metadata names a parent (a policy resubmitted a job); otherwise the outcomes
    are the records', in order. Runtime complexity: O(n).
    """
    outcomes = []
    append = outcomes.append
    copies = False
    for r in records:
        if r.start is None:
            append(JobOutcome(r.submission_time, None, None, r.requested_resources, False,
                              False, r.fields.deadline))
        else:
            append(JobOutcome(r.submission_time, r.start, r.completion_time,
                              r.requested_resources, r.success, r.final_state in _KILLED,
                              r.fields.deadline, r.alloc))
        if r.metadata and parent_of(r.metadata) is not None:
            copies = True
    if not copies:
        return outcomes
    return merge_copies([(r.job_id, r.metadata, outcome)
                         for r, outcome in zip(records, outcomes, strict=True)])


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
                   groups: Mapping[str, MachineSet] | None = None) -> RunReport:
    """Simulate to the end, writing the outputs as it goes; they are complete on error too.

    ``simulator_factory`` builds the simulator given the per-job callback (so rows reach
    ``jobs.csv`` as jobs end). ``extra_columns`` are the job fields written after
    Batsim's columns (:func:`~batpolicy.scheduler.jobfields.fields_used`); ``groups``
    (name -> machines) adds utilisation per group to the metrics. Errors are re-raised
    after the outputs are written; ``metrics.json`` then holds ``"error"`` and
    ``"complete": false``.
    """
    paths.create_parents()
    began = time.perf_counter()
    bar = _Progress(nb_jobs, progress)
    close_record: Callable[[], None] | None = None
    if record is not None:
        scheduler, close_record = _recording(scheduler, record)
    error: BaseException | None = None
    # The collector tuned for the whole run, the records' metrics included: after the loop
    # they build one outcome per job, which default thresholds rescan the heap for.
    with JobsCsvWriter(paths.jobs, extra_columns=extra_columns) as jobs, steady_gc():
        def on_record(r: JobRecord) -> None:
            """Append the job's row, advance the progress."""
            jobs.write(r)
            bar.job_ended(r.finish if r.finish is not None else r.submission_time)

        simulator = simulator_factory(on_record)
        try:
            simulator.run(scheduler)
        except BaseException as exc:
            error = exc
            raise
        finally:
            bar.close()
            if close_record is not None:
                close_record()
            result = simulator.result()
            wall = time.perf_counter() - began
            write_schedule_csv(paths.schedule, result)
            metrics = _metrics(result, wall, tau, error, describe, policy_stats, nb_decisions,
                               groups)
            model_stats = simulator.job_model_stats()
            if model_stats:  # e.g. the co-allocation models' mean penalty
                metrics["job_model_stats"] = model_stats
            _write_json(paths.metrics, metrics)
    return RunReport(result, metrics, paths, wall)


def _metrics(result: SimResult, wall: float, tau: float, error: BaseException | None,
             describe: Mapping[str, Any] | None,
             policy_stats: Callable[[], dict[str, Any]] | None,
             nb_decisions: Callable[[], int] | None,
             groups: Mapping[str, MachineSet] | None = None) -> dict[str, Any]:
    decisions = nb_decisions() if nb_decisions is not None else 0
    metrics: dict[str, Any] = dict(describe or {})
    if groups and result.nb_machines:  # --mmax: only the simulated machines count
        simulated = MachineSet.span(0, result.nb_machines - 1)
        groups = {name: g & simulated for name, g in groups.items() if g & simulated}
    metrics.update(compute_metrics(_outcomes(result.records), nb_machines=result.nb_machines,
                                   tau=tau, scheduler_time_s=result.scheduling_time,
                                   nb_decisions=decisions, groups=groups))
    metrics.update({
        "nb_machines": result.nb_machines,
        "nb_job_records": len(result.records),
        # submitted or registered but not ended: 0 unless the run stopped early
        "nb_jobs_open": result.nb_jobs - len(result.records),
        "nb_messages": result.nb_messages,
        "nb_decisions": decisions,
        "simulated_time_s": result.end_time,
        "wall_time_s": wall,
        "jobs_per_second": len(result.records) / wall if wall > 0 else None,
        "complete": result.complete and error is None,
    })
    if policy_stats is not None:
        try:
            metrics["policy_stats"] = policy_stats()
        except Exception as exc:  # a broken stats() must not hide the run's outputs
            metrics["policy_stats_error"] = f"{type(exc).__name__}: {exc}"
    if error is not None:
        metrics["error"] = ("interrupted" if isinstance(error, KeyboardInterrupt)
                            else f"{type(error).__name__}: {error}")
    return metrics


def _write_json(path: Path, data: dict[str, Any]) -> None:
    tmp = path.with_name(path.name + ".tmp")
    tmp.write_text(json.dumps(data, indent=2, sort_keys=True, default=str) + "\n")
    tmp.replace(path)
