"""Shared pieces of the reliability suite: scale knob, scenarios, one checked simulation.

``BATPOLICY_FUZZ_SCALE`` (a float, default 1) multiplies every example count of the
suite, e.g. ``BATPOLICY_FUZZ_SCALE=50 python -m pytest tests/reliability`` for a long
local run. The default keeps the whole suite well under CI's two-minute budget.
"""

from __future__ import annotations

import csv
import os
import tempfile
from collections import defaultdict
from dataclasses import dataclass, field
from pathlib import Path
from typing import Any, NamedTuple

from hypothesis import strategies as st
from hypothesis.database import DirectoryBasedExampleDatabase

from batpolicy.io.events import ExternalEvent
from batpolicy.io.outputs import JobsCsvWriter
from batpolicy.io.workload import JobSpec, Workload
from batpolicy.platforms.model import Platform
from batpolicy.policies.base import Policy
from batpolicy.policies.registry import make_policy
from batpolicy.protocol import types as t
from batpolicy.protocol.intervals import MachineSet
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.dispatch import Dispatcher
from batpolicy.simulator import JobRecord, SimOptions, Simulator

REPO = Path(__file__).resolve().parents[2]

#: Where hypothesis keeps the failing examples it found (replayed first on the next run).
#: A failure found there is then written as an explicit ``@example`` in the test.
DATABASE = DirectoryBasedExampleDatabase(str(REPO / ".hypothesis" / "reliability"))


def scale() -> float:
    """The ``BATPOLICY_FUZZ_SCALE`` multiplier (default 1, never below 0.01)."""
    try:
        return max(float(os.environ.get("BATPOLICY_FUZZ_SCALE", "1")), 0.01)
    except ValueError:
        return 1.0


def scaled(count: int) -> int:
    """``count`` examples times the fuzz scale, at least 1.

    >>> scaled(10) >= 1
    True
    """
    return max(1, int(count * scale()))


# ------------------------------------------------------------------ scenarios
class Job(NamedTuple):
    """A delay job: name, subtime, res, runtime (the delay), walltime (None: none)."""

    name: str
    subtime: int
    res: int
    runtime: int
    walltime: int | None


class Window(NamedTuple):
    """Machines ``first..last`` unavailable from ``down`` until ``up`` (exclusive)."""

    first: int
    last: int
    down: int
    up: int


class Scenario(NamedTuple):
    """A platform size, jobs, and unavailability windows (literal, so ``@example`` works)."""

    nb: int
    jobs: tuple[Job, ...]
    windows: tuple[Window, ...] = ()


@st.composite
def scenarios(draw: st.DrawFn, *, max_machines: int = 64, max_jobs: int = 20,
              windows: bool = True, exact_walltimes: bool = False) -> Scenario:
    """Random delay workloads on 1..``max_machines`` machines, with (un)availability windows.

    Walltimes are none, equal, larger or smaller than the runtime (so walltime kills
    happen) unless ``exact_walltimes``; runtimes may be 0 (Batsim's null-time jobs).
    Windows on one machine never overlap and always end (Batsim aborts on a machine
    made unavailable twice, and a job wider than the machines left could never start).
    """
    nb = draw(st.integers(1, max_machines))
    small = draw(st.booleans())  # many narrow jobs, or a mix up to the whole platform
    top = max(1, nb // 4) if small else nb
    at = 0
    jobs = []
    for i in range(draw(st.integers(0, max_jobs))):
        at += draw(st.sampled_from((0, 0, 1, 3, 10, 40)))
        runtime = draw(st.integers(0 if not exact_walltimes else 1, 60))
        if exact_walltimes:
            walltime: int | None = runtime
        else:
            walltime = draw(st.sampled_from((None, runtime, runtime + 5, runtime // 2,
                                             2 * runtime)))
            if walltime is not None and walltime <= 0:
                walltime = None  # Batsim: a walltime is > 0 or absent
        jobs.append(Job(str(i), at, draw(st.integers(1, top)), runtime, walltime))
    chosen: list[Window] = []
    if windows:
        for _ in range(draw(st.integers(0, 3))):
            first = draw(st.integers(0, nb - 1))
            last = draw(st.integers(first, min(nb - 1, first + 8)))
            down = draw(st.integers(0, at + 60))
            up = down + draw(st.integers(1, 80))
            if all(w.last < first or w.first > last or w.up <= down or w.down >= up
                   for w in chosen):
                chosen.append(Window(first, last, down, up))
    return Scenario(nb, tuple(jobs), tuple(chosen))


def workload(scenario: Scenario) -> Workload:
    """The scenario's jobs as a Batsim workload ``w0`` with one delay profile per runtime."""
    specs, profiles = [], {}
    for job in scenario.jobs:
        profile = f"d{job.runtime}"
        profiles[profile] = {"type": "delay", "delay": float(job.runtime)}
        full = f"w0!{job.name}"
        raw: dict[str, Any] = {"id": full, "subtime": job.subtime, "res": job.res,
                               "profile": profile}
        if job.walltime is not None:
            raw["walltime"] = job.walltime
        specs.append(JobSpec(full, float(job.subtime), job.res, profile,
                             None if job.walltime is None else float(job.walltime), raw))
    out = Workload("w0", specs, profiles)
    out.sort()
    return out


def external_events(scenario: Scenario) -> list[ExternalEvent]:
    """machine_unavailable / machine_available events of the scenario's windows."""
    events = []
    for w in scenario.windows:
        machines = MachineSet.span(w.first, w.last)
        for at, kind in ((w.down, "machine_unavailable"), (w.up, "machine_available")):
            events.append(ExternalEvent(float(at), kind, machines,
                                        {"timestamp": at, "type": kind,
                                         "resources": str(machines)}))
    # at one instant, machines come back before others go (a window may start where
    # another on the same machines ends; Batsim applies events of an instant in file order)
    events.sort(key=lambda e: (e.timestamp, e.type == "machine_unavailable"))
    return events


def options_for(policy: str, **extra: Any) -> SimOptions:
    """Batsim flags a policy needs: redirection restarts jobs, so it needs dynamic jobs."""
    if policy == "redirection":
        extra.setdefault("dynamic_jobs", True)
        extra.setdefault("profile_reuse", True)
    return SimOptions(**extra)


def params_for(policy: str) -> dict[str, str]:
    """Parameters that let a policy run on any workload (redirection: copies in place).

    Redirection with its default ``copy_workload=redir`` needs the profile table of
    SIMULATION_BEGINS, which is empty for an empty workload; with profile reuse the
    copies name the original profile instead.
    """
    return {"copy_workload": "@original"} if policy == "redirection" else {}


# ------------------------------------------------------------------ one checked run
@dataclass
class Run:
    """What one simulation left: records, the jobs.csv rows, decisions, reservations."""

    scenario: Scenario
    policy: Policy
    records: list[JobRecord]
    csv_ids: list[str]
    registered: list[str]
    reservations: list[tuple[float, str, float]] = field(default_factory=list)
    complete: bool = False


def reservation_of(policy: Policy) -> Any:
    """The head's reservation the policy made at its last decision, if it exposes one."""
    return getattr(policy, "last_reservation", None)


def simulate(policy_name: str, scenario: Scenario, params: dict[str, str] | None = None,
             **options: Any) -> Run:
    """Run ``scenario`` through the embedded simulator with a paranoid dispatcher.

    Any checker refusal (:class:`InvalidDecision`), Batsim-rule abort of the simulator
    or state-invariant break raises out of here and fails the calling test.
    """
    policy = make_policy(policy_name, params if params is not None else params_for(policy_name))
    dispatcher = Dispatcher(policy, paranoid=True)
    registered: list[str] = []
    reservations: list[tuple[float, str, float]] = []

    def scheduler(request: t.Request) -> t.Reply:
        reply = dispatcher.handle(request)
        registered.extend(d.job_id for d in reply.decisions if isinstance(d, t.RegisterJob))
        reservation = reservation_of(policy)
        if reservation is not None:
            reservations.append((request.now, reservation.job.id, reservation.shadow_time))
        return reply

    with tempfile.TemporaryDirectory() as tmp:
        path = Path(tmp) / "out_jobs.csv"
        with JobsCsvWriter(path) as writer:
            sim = Simulator([workload(scenario)], Platform.homogeneous(scenario.nb),
                            events=external_events(scenario),
                            options=options_for(policy_name, **options), on_record=writer.write)
            result = sim.run(scheduler)
        with path.open(newline="") as f:
            csv_ids = [f"{row['workload_name']}!{row['job_id']}" for row in csv.DictReader(f)]
    return Run(scenario, policy, list(result.records), csv_ids, registered, reservations,
               result.complete)


# ------------------------------------------------------------------ the properties
def unavailable_at(scenario: Scenario, at: float) -> MachineSet:
    """Machines unavailable at time ``at`` (windows are [down, up))."""
    out = MachineSet()
    for w in scenario.windows:
        if w.down <= at < w.up:
            out |= MachineSet.span(w.first, w.last)
    return out


def check_run(run: Run) -> None:
    """Every property of issue 6, item 1, on one finished simulation."""
    scenario = run.scenario
    assert run.complete, "the simulation did not reach SIMULATION_ENDS"
    specs = {f"w0!{job.name}": job for job in scenario.jobs}
    ids = [r.job_id for r in run.records]
    # every submitted (or registered) job ends exactly once, and once in jobs.csv
    assert len(ids) == len(set(ids)), f"a job ended twice: {sorted(ids)}"
    assert set(ids) == set(specs) | set(run.registered)
    assert sorted(run.csv_ids) == sorted(ids)
    busy: dict[int, list[tuple[float, float, str]]] = defaultdict(list)
    for r in run.records:
        if r.final_state is JobState.REJECTED:
            assert r.start is None and r.alloc is None
            continue
        assert r.start is not None and r.finish is not None and r.alloc is not None
        assert r.start >= r.submission_time, f"{r.job_id} started before its submission"
        assert len(r.alloc) == r.requested_resources
        # no job on an unavailable machine
        down = unavailable_at(scenario, r.start) & r.alloc
        assert not down, f"{r.job_id} started at {r.start} on unavailable machines {down}"
        spec = specs.get(r.job_id) or specs.get(_parent(r))
        if spec is not None:
            _check_times(r, spec)
        for m in r.alloc:
            busy[m].append((r.start, r.finish, r.job_id))
    # no machine used by two jobs at once (sweep per machine)
    for m, spans in busy.items():
        spans.sort()
        for (s1, f1, j1), (s2, _, j2) in zip(spans, spans[1:], strict=False):
            assert f1 <= s2, f"machine {m} used by {j1} [{s1}, {f1}) and {j2} from {s2}"


def _parent(record: JobRecord) -> str | None:
    key, _, value = record.metadata.partition("=")
    return value if key == "parent" else None


def _check_times(r: JobRecord, spec: Job) -> None:
    """Finish = start + runtime, or start + walltime for a walltime kill; kills end earlier."""
    assert r.start is not None and r.finish is not None
    length = r.finish - r.start
    state = r.final_state
    if state is JobState.COMPLETED_SUCCESSFULLY:
        assert spec.walltime is None or spec.runtime < spec.walltime
        assert length == spec.runtime, f"{r.job_id}: ran {length}, runtime {spec.runtime}"
        if spec.runtime == 0:
            assert r.runtime == 1e-5  # Batsim's null-time runtime
    elif state is JobState.COMPLETED_WALLTIME_REACHED:
        assert spec.walltime is not None and spec.runtime >= spec.walltime
        assert length == spec.walltime, f"{r.job_id}: ran {length}, walltime {spec.walltime}"
    elif state is JobState.COMPLETED_KILLED:
        limit = spec.runtime if spec.walltime is None else min(spec.runtime, spec.walltime)
        assert length <= limit
    else:
        raise AssertionError(f"{r.job_id} ended {state}")
