"""Unit-test your policies offline: a run on an inline workload, its schedule as data.

The embedded simulator (Batsim 4.2.1's semantics on a zero-latency platform) runs the
policy through the same dispatcher and checker as ``batpolicy serve`` and ``simulate``,
with every state invariant checked after every message (``paranoid``). Example::

    from batpolicy.testing import simulate

    def test_easy_backfills_the_short_job():
        s = simulate("easy", [(0, 4, 100, 100), (1, 2, 50, 50), (2, 1, 10, 10)],
                     machines=5)
        assert s.start("2") == 2.0            # backfilled beside the running head
        assert s.start("1") == 100.0          # waits for the 4-machine job
        assert s.machines("2") == [4]

Jobs are ``(subtime, res, runtime[, walltime])`` tuples (ids ``"0"``, ``"1"``, ... in
order) or dicts with ``id``, ``subtime``, ``res``, ``runtime`` and optional ``walltime``
and extra fields (``deadline``...), kept as Batsim would forward them. A policy is a
registered name or an instance of your own :class:`~batpolicy.policies.base.Policy`.

A pybatsim scheduler runs the same way, unmodified and in-process (docs/pybatsim.md):
``"pybatsim:NAME"`` (pybatsim's bundled ``schedulers``), ``"pybatsim:path/to/my_sched.py"``,
or the scheduler object or class itself; its launcher options go in
``params={"options": {...}}``. Jobs may also be a Batsim JSON workload or SWF file, and
``machines`` a SimGrid platform file::

    s = simulate("pybatsim:easyBackfill", "workload.json", machines="platform.xml")

For pytest, ``pytest_plugins = ["batpolicy.testing"]`` in your top-level ``conftest.py``
(or ``from batpolicy.testing import run_policy`` in a test module) gives the
``run_policy`` fixture (the same :func:`simulate`).
"""

from __future__ import annotations

from collections.abc import Mapping, Sequence
from dataclasses import dataclass
from os import PathLike
from typing import Any

from batpolicy.io.result import JobRecord
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Platform
from batpolicy.policies.base import Policy
from batpolicy.protocol import types as t
from batpolicy.protocol.types import JobState

__all__ = ["Schedule", "decision_key", "run_policy", "simulate"]

JobLike = Sequence[float] | Mapping[str, Any]


@dataclass(frozen=True, slots=True)
class Schedule:
    """What a run did to each job (by its short id) and the run's metrics."""

    records: Mapping[str, JobRecord]
    metrics: Mapping[str, Any]

    def start(self, job: str) -> float | None:
        """When the job started (``None``: rejected or never started)."""
        return self.records[job].start

    def finish(self, job: str) -> float | None:
        """When the job ended."""
        return self.records[job].finish

    def machines(self, job: str) -> list[int]:
        """The machine ids the job ran on, sorted."""
        alloc = self.records[job].alloc
        return sorted(alloc) if alloc is not None else []

    def state(self, job: str) -> JobState:
        """The job's final state (COMPLETED_SUCCESSFULLY, REJECTED, ...)."""
        return self.records[job].final_state

    def starts(self) -> dict[str, float | None]:
        """Every job's start, by id."""
        return {job: r.start for job, r in self.records.items()}

    def order(self) -> list[str]:
        """Job ids in the order they started (ties by id); rejected jobs left out."""
        started = [(r.start, job) for job, r in self.records.items() if r.start is not None]
        return [job for _, job in sorted(started)]


def decision_key(decision: t.Decision) -> tuple[Any, ...]:
    """A decision as a comparable tuple: what "the same decisions as batsched" compares.

    Jobs started (id and machine ids), jobs rejected; any other decision by its kind.
    """
    kind = type(decision).__name__
    if isinstance(decision, t.ExecuteJob):
        return (kind, decision.job_id, str(decision.alloc))
    if isinstance(decision, t.RejectJob):
        return (kind, decision.job_id)
    return (kind,)


def _platform(machines: int | Platform | str | PathLike[str]) -> Platform:
    if isinstance(machines, Platform):
        return machines
    if isinstance(machines, str | PathLike):
        from batpolicy.platforms.xml import read_platform

        return read_platform(machines)
    return Platform.homogeneous(machines)


def _read_jobs(jobs: Sequence[JobLike] | str | PathLike[str]) -> Workload:
    if isinstance(jobs, str | PathLike):  # a file, read as `simulate -w FILE` reads it
        from batpolicy.io.inputs import InputSpec, read_workload

        return read_workload(str(jobs), "w0", InputSpec())
    return _workload(jobs)


def _workload(jobs: Sequence[JobLike]) -> Workload:
    specs, profiles = [], {}
    for i, job in enumerate(jobs):
        if isinstance(job, Mapping):
            fields = dict(job)
            name = str(fields.pop("id", i))
            subtime, res = float(fields.pop("subtime")), int(fields.pop("res"))
            runtime, walltime = float(fields.pop("runtime")), fields.pop("walltime", None)
        else:
            name, subtime, res, runtime = str(i), float(job[0]), int(job[1]), float(job[2])
            walltime = job[3] if len(job) > 3 else None
            fields = {}
        profile = f"p{name}"
        profiles[profile] = {"type": "delay", "delay": runtime}
        raw = {"id": f"w0!{name}", "subtime": subtime, "res": res, "profile": profile,
               "walltime": -1 if walltime is None else float(walltime), **fields}
        specs.append(JobSpec(f"w0!{name}", subtime, res, profile,
                             None if walltime is None else float(walltime), raw))
    workload = Workload("w0", specs, profiles, source="inline")
    workload.sort()
    return workload


def simulate(policy: str | Policy | Any, jobs: Sequence[JobLike] | str | PathLike[str], *,
             machines: int | Platform | str | PathLike[str] = 4,
             params: Mapping[str, Any] | None = None, job_model: str = "profile",
             dynamic_jobs: bool | None = None, paranoid: bool = True) -> Schedule:
    """Run ``policy`` on ``jobs`` over ``machines`` identical machines (or a platform).

    ``policy``: a registered name, a :class:`Policy`, or a pybatsim scheduler
    (``"pybatsim:..."``, an object or class; :mod:`.simulator.pybatsim.testing`).
    ``jobs``: inline jobs or a workload file; ``machines``: a count, a
    :class:`Platform` or a platform file. Invalid decisions raise
    :class:`~batpolicy.errors.InvalidDecision` naming the policy, job and machines, as
    in a real run; an exception in a pybatsim scheduler a
    :class:`~batpolicy.errors.PolicyError` naming the scheduler, event and time.
    """
    from batpolicy.policies.registry import make_policy
    from batpolicy.scheduler.dispatch import Dispatcher
    from batpolicy.scheduler.outcomes import JobOutcome, compute_metrics
    from batpolicy.scheduler.state import ClusterState
    from batpolicy.simulator.engine.simulator import Simulator
    from batpolicy.simulator.options import SimOptions
    from batpolicy.simulator.pybatsim.testing import pybatsim_driver

    platform = _platform(machines)
    # the policy sees the platform's groups, speeds and GPUs as `simulate -p FILE` shows them
    state = ClusterState(platform_file=platform)
    driver = pybatsim_driver(policy, params, paranoid=paranoid, state=state)
    if driver is not None:
        scheduler, dynamic = driver, bool(dynamic_jobs)
    else:
        if isinstance(policy, str):
            policy = make_policy(policy, params)
        elif params:
            raise TypeError("params go with a policy name; configure your instance directly")
        dynamic = policy.needs_dynamic_jobs if dynamic_jobs is None else dynamic_jobs
        scheduler = Dispatcher(policy, state, paranoid=paranoid).handle
    simulator = Simulator([_read_jobs(jobs)], platform, options=SimOptions(
        dynamic_jobs=dynamic, default_job_model=job_model))
    result = simulator.run(scheduler)
    records = {r.job_id.split("!", 1)[1]: r for r in result.records}
    outcomes = [JobOutcome(r.submission_time, r.start, r.finish, r.requested_resources,
                           r.final_state is JobState.COMPLETED_SUCCESSFULLY)
                for r in result.records]
    metrics = compute_metrics(outcomes, nb_machines=platform.nb_machines)
    return Schedule(records, metrics)


try:  # the pytest fixture, when pytest is there (``pytest_plugins = ["batpolicy.testing"]``)
    import pytest

    @pytest.fixture
    def run_policy() -> Any:
        """:func:`simulate`, as a fixture."""
        return simulate
except ImportError:  # pragma: no cover - batpolicy itself does not need pytest
    pass
