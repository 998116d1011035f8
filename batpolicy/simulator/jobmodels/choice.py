"""Which job model runs each job of a run: per workload, per job, or the default.

:class:`ModelChoice` builds the models :class:`~batpolicy.simulator.options.SimOptions`
names (``default_job_model``, ``job_models`` per workload) and those jobs name in their
``job_model`` field, through the one registry (:mod:`.registry`), one instance per name.
Models that are also :class:`~batpolicy.simulator.instant.InstantModel` are handed
to the per-instant hook as they appear (``on_instant_model``).
"""

from __future__ import annotations

from collections.abc import Callable, Sequence
from dataclasses import replace
from typing import Any

from batpolicy.errors import ConfigError, InputError
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.simulator.instant import InstantModel
from batpolicy.simulator.jobmodels.base import JobModel
from batpolicy.simulator.jobmodels.registry import make_job_model
from batpolicy.simulator.options import SimOptions
from batpolicy.simulator.records import SimJob

__all__ = ["ModelChoice", "with_default_model"]


def with_default_model(options: SimOptions, workloads: Sequence[Workload]) -> SimOptions:
    """The options with ``ptask`` as default job model where Batsim would need it.

    ``ptask`` (:mod:`.ptask.jobmodel`) runs Batsim's jobs as SimGrid parallel tasks when
    they move data, map executors onto one machine or share machines, and the others
    in closed form; it is the default for Batsim JSON workloads and with compute
    sharing, when the options leave the default (``profile``), with ``-E`` as without
    (the energy part follows its tasks' loads, :class:`~.host_energy.TaskPower`).
    """
    if options.default_job_model == "profile" and (options.compute_sharing or any(
            (w.source or "").endswith(".json") for w in workloads)):
        return replace(options, default_job_model="ptask")
    return options


class ModelChoice:
    """The job models of one run, by workload and by the names jobs give."""

    __slots__ = ("default", "by_workload", "_named", "on_instant_model")

    def __init__(self, options: SimOptions) -> None:
        self.default: JobModel = make_job_model(options.default_job_model)
        self.by_workload: dict[str, JobModel] = {
            name: make_job_model(spec) for name, spec in options.job_models.items()}
        self._named: dict[str, JobModel] = {}  # per-job ``job_model`` fields
        #: Called with each model named by a job that is also an instant model.
        self.on_instant_model: Callable[[InstantModel], None] | None = None

    def configured(self) -> list[JobModel]:
        """The default and per-workload models (the options' models), default first."""
        return [self.default, *self.by_workload.values()]

    def for_workload(self, workload: str) -> JobModel:
        """The model of ``workload``'s jobs that name none. Runtime complexity: O(1)."""
        return self.by_workload.get(workload, self.default)

    def named(self, name: str) -> JobModel:
        """The model a job's ``job_model`` field names (one instance per name)."""
        model = self._named.get(name)
        if model is None:
            model = self._named[name] = make_job_model(name)
            if isinstance(model, InstantModel) and self.on_instant_model is not None:
                self.on_instant_model(model)
        return model

    def of(self, job: SimJob) -> JobModel:
        """A job's model: its ``job_model`` field, else its workload's, else the default."""
        name = job.fields.job_model
        if name is None:
            return self.by_workload.get(job.workload, self.default)
        return self.named(name)

    def check(self, workload: Workload) -> None:
        """Check that each (model, profile) pair the workload's jobs use can run.

        An unknown model or a profile a model cannot run is an :class:`InputError`
        naming the file and job. Runtime complexity: O(jobs) plus one check per pair.
        """
        default = self.for_workload(workload.name)
        pairs: dict[tuple[str | None, str], JobSpec] = {}
        examples = getattr(workload.jobs, "examples", None)  # a streamed trace's: no pass
        if examples is not None:  # SWF jobs name no model
            pairs = {(None, profile): JobSpec(job_id, 0.0, 0, profile)
                     for profile, job_id in examples.items()}
        for job in workload.jobs if examples is None else ():
            pairs.setdefault((job.raw.get("job_model"), job.profile), job)
        used = []
        for (name, profile), job in pairs.items():
            try:
                used.append((default if name is None else self.named(str(name)), profile))
            except ConfigError as exc:
                raise InputError(str(exc), path=workload.source, job=job.id,
                                 field="job_model") from None
        for model in {id(m): m for m, _ in used}.values():
            # files the profiles name (usage_trace), checked as Batsim loads the workload
            read_files = model.read_files
            if read_files is not None:
                read_files(workload.name, workload.source, workload.profiles)
        for model, profile in used:
            try:
                model.check(workload.name, profile, workload.profiles)
            except InputError as exc:
                if exc.path or not workload.source:
                    raise
                raise InputError(exc.detail, path=workload.source, line=exc.line, job=exc.job,
                                 field=exc.field) from None

    def stats(self) -> dict[str, Any]:
        """Statistics of the configured models that keep some (co-allocation penalty...)."""
        out: dict[str, Any] = {}
        for model in {id(m): m for m in self.configured()}.values():
            stats = model.stats
            if stats is not None:
                out.update(stats())
        return out
