"""Job models: how long a job runs on its allocation, and how its end moves.

A :class:`JobModel` is asked three things by the engine: :meth:`~JobModel.start` (the
planned end, and how the job will end), :meth:`~JobModel.on_change` (something the job
depends on changed, e.g. the speed of one of its machines: the new planned end) and
:meth:`~JobModel.progress` (the ``job_progress`` entry of a kill). The engine keeps one
live completion event per running job and reschedules it when the end moves, so a new
model (bandwidth sharing, placement-dependent runtime) plugs in without touching it.

:class:`ProfileModel` is Batsim 4.2.1 (``src/jobs_execution.cpp``):

- ``delay``: sleeps ``delay`` seconds; if ``delay >= remaining walltime`` it sleeps the
  walltime instead and ends ``COMPLETED_WALLTIME_REACHED`` (``do_delay_task``);
- a parallel task (the three ``parallel*`` types below) is waited for with the remaining
  walltime as timeout (``task_execution.cpp``: ``ptask->wait_for``). SimGrid's L07 model
  runs the timeout as a sleep action of the same model, started after the task, and ends
  the actions due at one date in their start order (``ptask_L07.cpp``,
  ``HostL07Model::update_actions_state``): a task ending exactly at the timeout completes
  (``test_walltime::test_walltime2``, job 1010 on cluster512). But a sleep ends up to
  1e-9 s early (``sg_surf_precision``) when the solver stops just before its date, i.e.
  when another action ends there: on a zero-latency platform the jobs one reply starts
  end picoseconds apart, and Batsim then reports the walltime reached (job 1010 on
  ``zero_lat_cluster128.xml``, tests/data/batsched_walltime). The model follows the first
  when Batsim's messages take time (the latency driver) and the second otherwise;
- ``composed`` / ``sequence``: its ``seq`` of profiles, ``repeat`` times, the remaining
  walltime carried from one task to the next, with Batsim's arithmetic (each task's end
  is the previous end plus the task's duration); a task with ``ret != 0`` ends the
  sequence;
- ``parallel_homogeneous`` (``cpu`` flop per machine), ``parallel_homogeneous_total``
  (``cpu`` flop split over the allocation) and ``parallel`` (``cpu[i]`` flop on the
  i-th machine): **computation only**: duration = work / machine speed, the slowest
  machine deciding; the ``com`` part (network) is ignored, which is exact on Batsim's
  zero-latency, huge-bandwidth platforms and an under-estimate elsewhere;
- ``ret != 0`` ends the job ``COMPLETED_FAILED`` with that return code; a zero-length
  job ends at its start (Batsim writes a runtime of 1e-5 s, see the engine);
- any other type (``smpi``, ``usage_trace``, ``parallel_homogeneous_pfs``,
  ``data_staging``) is refused with an :class:`~batpolicy.errors.InputError` (the
  ``ptask`` model, :mod:`~batpolicy.simulator.jobmodels.ptask.jobmodel`, runs the last three).

:class:`SpeedScaledModel` (``--job-model speed``) is the first model whose end moves: a
job carries an amount of work (``delay`` seconds at ``reference_speed``, or ``cpu``
flop) done at the speed of the slowest machine of its allocation; when a speed
changes, the remaining work is re-planned at the new speed.

:class:`PlacementModel` (``--job-model placement``, seed 001) runs a job its profile's
delay on its preferred placement and its ``runtime_other`` field elsewhere.

Ends that depend on *other* jobs (bandwidth shared by co-allocated jobs) are moved by
an :class:`~batpolicy.simulator.instant.InstantModel`, once per instant, starting
from each job model's :meth:`~JobModel.natural` end.

Beyond those methods a model may provide **optional hooks**, each declared on
:class:`JobModel` with ``None`` (or an empty value) as default: the engine reads the
attribute and calls it only where a model set it, so a run whose models have none pays
nothing. A model provides one by defining a method of that name (``from_argument`` a
classmethod). They are: ``from_argument`` (``--job-model NAME:ARG``), ``read_files``
(files the profiles name, read when the workload loads), ``extra_columns`` with
``record_extra`` (the model's own ``jobs.csv`` columns), ``stats`` (keys of
``metrics.json``'s ``job_model`` entry), ``host_load`` (what the energy part is told of a
running job's load), ``job_reported`` and ``in_solver`` (when the job's actor reports its
end), ``message_network`` (a network that Batsim's messages share with the jobs, on the
latency driver).
"""

from __future__ import annotations

from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from typing import Any, ClassVar, Protocol

from batpolicy.errors import InputError
from batpolicy.platforms.model import Platform
from batpolicy.platforms.placement import is_preferred
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.jobfields import JobFields

__all__ = ["JobModel", "ModelContext", "PlacementModel", "ProfileModel", "SpeedScaledModel",
           "check_profile"]

#: Profile types whose tasks the models can run.
LEAF_TYPES = frozenset({"delay", "parallel_homogeneous", "parallel_homogeneous_total",
                        "parallel"})
#: Profile types Batsim runs as SimGrid parallel tasks (a task ending at the walltime completes).
PTASK_TYPES = frozenset({"parallel_homogeneous", "parallel_homogeneous_total", "parallel"})
#: Profile types that are sequences of other profiles.
SEQUENCE_TYPES = frozenset({"composed", "sequence"})
_NOT_SIMULATED = frozenset({"smpi", "usage_trace", "parallel_homogeneous_pfs",
                            "data_staging"})

_SUCCESS = JobState.COMPLETED_SUCCESSFULLY
_FAILED = JobState.COMPLETED_FAILED
_WALLTIME = JobState.COMPLETED_WALLTIME_REACHED


class ModelContext(Protocol):
    """What a job model may read of the Batsim side: speeds, platform, profile texts."""

    speeds: list[float]
    platform: Platform

    def profile_definition(self, workload: str, name: str) -> dict[str, Any]:
        """A profile as registered, even if Batsim has since garbage-collected its name."""


class RunningJob(Protocol):
    """The fields of a running job a model reads and sets."""

    id: str
    workload: str
    profile: str
    profile_data: dict[str, Any]
    walltime: float | None
    alloc: Any
    start: float
    end: float
    outcome: JobState
    return_code: int
    mstate: Any
    fields: JobFields


class JobModel(ABC):
    """How long a job runs and how it ends; see the module docstring."""

    #: Name used in :attr:`SimOptions.job_models`.
    name: ClassVar[str] = ""

    #: Whether the model merges EXECUTE_JOB's ``additional_io_job`` into the job's tasks.
    runs_io_jobs: ClassVar[bool] = False

    # ---- optional hooks (module docstring): None where the model has none ----------------
    #: ``from_argument(argument) -> JobModel``: the model of ``--job-model NAME:ARGUMENT``;
    #: None: the model takes no argument.
    from_argument: ClassVar[Callable[[str], JobModel] | None] = None
    #: ``read_files(workload, source, profiles)``: read and check the files the profiles
    #: name (``usage_trace``), as Batsim does when it loads the workload.
    read_files: Callable[[str, str | None, Mapping[str, dict[str, Any]]], None] | None = None
    #: The columns this model adds to ``jobs.csv``, after Batsim's and the job fields'.
    extra_columns: ClassVar[tuple[str, ...]] = ()
    #: ``record_extra(job, runtime) -> {column: cell}``: the job's cells of
    #: :attr:`extra_columns` when it leaves (``runtime`` None: rejected).
    record_extra: Callable[[RunningJob, float | None], dict[str, str]] | None = None
    #: ``stats() -> dict``: the model's figures for ``metrics.json`` (``job_model``).
    stats: Callable[[], dict[str, Any]] | None = None
    #: ``host_load(job, ctx)``: the share of a core ``job`` uses on each host, or None when
    #: the model tells the energy part itself (:class:`~..energy.host_energy.HostLoad`);
    #: None here: the profile's load (:func:`~..energy.host_energy.profile_load`).
    host_load: Callable[[RunningJob, Any], Mapping[int, float] | float | None] | None = None
    #: ``job_reported(job, now)``: the job's actor has reported its end at ``now``.
    job_reported: Callable[[RunningJob, float], None] | None = None
    #: ``in_solver(job) -> bool``: whether the job's end comes from the model's own
    #: solver (its report is then exact, not rounded to the message clock).
    in_solver: Callable[[RunningJob], bool] | None = None
    #: ``message_network(books, ends, master)``: the network Batsim's messages share with
    #: the jobs (latency driver), or None; a model returning one also provides
    #: ``actor_sleep`` and ``before_update`` (:class:`~.ptask.jobmodel.PtaskModel`).
    message_network: Callable[[Any, Any, str], Any] | None = None

    @abstractmethod
    def start(self, job: RunningJob, now: float, ctx: ModelContext) -> float:
        """Start ``job`` at ``now``: set ``job.outcome`` and ``job.return_code``, return its end."""

    def on_change(self, job: RunningJob, now: float, ctx: ModelContext) -> float:
        """Conditions changed at ``now``: return the new planned end (default: unchanged)."""
        return job.end

    @abstractmethod
    def progress(self, job: RunningJob, now: float, ctx: ModelContext) -> dict[str, Any]:
        """The ``job_progress`` entry (``profile_name``, ``progress``...) of a kill at ``now``."""

    def natural(self, job: RunningJob, ctx: ModelContext) -> tuple[float, JobState, int]:
        """(end, outcome, return code) of the running job as if it had no walltime.

        What an instant model (:mod:`.instant`) starts from. The default is the planned
        end, right unless the walltime capped it: models that cap override it.
        """
        return job.end, job.outcome, job.return_code

    def check(self, workload: str, name: str, profiles: Mapping[str, dict[str, Any]]) -> None:
        """Raise :class:`InputError` if this model cannot run profile ``name``."""
        check_profile(workload, name, profiles)


def check_profile(workload: str, name: str, profiles: Mapping[str, dict[str, Any]],
                  _depth: int = 0) -> None:
    """Raise :class:`InputError` unless profile ``name`` is one the simulator can run.

    >>> check_profile("w0", "p", {"p": {"type": "delay", "delay": 3}})
    >>> check_profile("w0", "p", {"p": {"type": "smpi", "trace": "t"}})
    Traceback (most recent call last):
    ...
    batpolicy.errors.InputError: field 'w0!p': profile type 'smpi' is not simulated by \
the embedded simulator (supported: composed, delay, parallel, parallel_homogeneous, \
parallel_homogeneous_total, sequence)
    """
    where = f"{workload}!{name}"
    profile = profiles.get(name)
    if not isinstance(profile, dict):
        raise InputError(f"profile '{name}' does not exist in workload '{workload}'",
                         field=where)
    kind = profile.get("type")
    if kind in SEQUENCE_TYPES:
        seq = profile.get("seq")
        if not isinstance(seq, list) or not seq:
            raise InputError("a composed profile needs a non-empty 'seq' list", field=where)
        repeat = profile.get("repeat", 1)
        if not isinstance(repeat, int) or isinstance(repeat, bool) or repeat < 1:
            raise InputError(f"'repeat' must be an integer >= 1, got {repeat!r}", field=where)
        if _depth > 20:
            raise InputError("composed profiles nested too deeply (a cycle?)", field=where)
        for sub in seq:
            check_profile(workload, str(sub), profiles, _depth + 1)
    elif kind == "delay":
        _number(profile, "delay", where)
    elif kind in ("parallel_homogeneous", "parallel_homogeneous_total"):
        _number(profile, "cpu", where)
    elif kind == "parallel":
        cpu = profile.get("cpu")
        if not isinstance(cpu, list) or not all(_is_number(c) and c >= 0 for c in cpu):
            raise InputError("a 'parallel' profile needs a 'cpu' list of numbers", field=where)
    else:
        supported = ", ".join(sorted(LEAF_TYPES | SEQUENCE_TYPES))
        what = "is not simulated by the embedded simulator" if kind in _NOT_SIMULATED \
            else "is unknown"
        raise InputError(f"profile type {kind!r} {what} (supported: {supported})", field=where)
    ret = profile.get("ret", 0)
    if not isinstance(ret, int) or isinstance(ret, bool):
        raise InputError(f"'ret' must be an integer, got {ret!r}", field=where)


def _is_number(value: Any) -> bool:
    return isinstance(value, (int, float)) and not isinstance(value, bool)


def _number(profile: dict[str, Any], key: str, where: str) -> float:
    value = profile.get(key)
    if not _is_number(value) or value < 0:
        raise InputError(f"'{key}' must be a number >= 0, got {value!r}", field=where)
    return float(value)


def _slowest(alloc: Any, speeds: list[float]) -> float:
    """Speed of the slowest machine of ``alloc``.

    >>> from batpolicy.protocol.intervals import MachineSet
    >>> _slowest(MachineSet.span(0, 2), [2.0, 1.0, 3.0])
    1.0
    """
    return min(speeds[m] for m in alloc)


def _leaf_duration(profile: dict[str, Any], job: RunningJob, ctx: ModelContext) -> float:
    kind = profile["type"]
    if kind == "delay":
        return float(profile["delay"])
    speeds = ctx.speeds
    if kind == "parallel_homogeneous":
        return float(profile["cpu"]) / _slowest(job.alloc, speeds)
    if kind == "parallel_homogeneous_total":
        return float(profile["cpu"]) / len(job.alloc) / _slowest(job.alloc, speeds)
    machines = list(job.alloc)  # "parallel": executor i on the i-th machine
    cpu = profile["cpu"]
    return max((float(c) / speeds[machines[i % len(machines)]] for i, c in enumerate(cpu)),
               default=0.0)


def _outcome(ret: int) -> JobState:
    return _SUCCESS if ret == 0 else _FAILED


class ProfileModel(JobModel):
    """Batsim 4.2.1's execution of delay, composed and (compute-only) parallel profiles."""

    name = "profile"

    def start(self, job: RunningJob, now: float, ctx: ModelContext) -> float:
        """Plan the job with Batsim's walltime arithmetic. Runtime complexity: O(tasks)."""
        remaining = job.walltime if job.walltime is not None else -1.0
        profile = job.profile_data
        kind = profile["type"]
        # a trace's every job: _run's leaf step without its three calls (a subclass may
        # override _run: it keeps the general path)
        if kind == "delay" and type(self) is ProfileModel:
            duration = float(profile["delay"])
            if remaining < 0 or duration < remaining:
                ret = int(profile.get("ret", 0))
                job.outcome = _SUCCESS if ret == 0 else _FAILED
                job.return_code = ret
                return now + duration
            job.outcome = _WALLTIME
            job.return_code = -1
            return now + remaining
        starts: list[float] | None = [] if kind in SEQUENCE_TYPES else None
        end, remaining, state, ret = self._run(profile, job, now, remaining, ctx, starts)
        job.outcome = state
        job.return_code = ret
        if starts is not None:  # Batsim's executor sleeps once per task (do_delay_task)
            job.phases = tuple(t for t in dict.fromkeys(starts) if now < t < end)
        return end

    def _run(self, profile: dict[str, Any], job: RunningJob, t: float, remaining: float,
             ctx: ModelContext, starts: list[float] | None = None
             ) -> tuple[float, float, JobState, int]:
        """Run ``profile`` from ``t``: (end, remaining walltime, state, return code).

        ``starts``, if given, gets the start of each task (leaf) run.
        """
        if profile["type"] in SEQUENCE_TYPES:
            for _ in range(int(profile.get("repeat", 1))):
                for sub in profile["seq"]:
                    sub_profile = ctx.profile_definition(job.workload, str(sub))
                    t, remaining, state, ret = self._run(sub_profile, job, t, remaining, ctx,
                                                         starts)
                    if state is not _SUCCESS:
                        return t, remaining, state, ret
            ret = int(profile.get("ret", 0))
            return t, remaining, _outcome(ret), ret
        if starts is not None:
            starts.append(t)
        duration = _leaf_duration(profile, job, ctx)
        if remaining < 0 or duration < remaining or (
                duration == remaining and profile["type"] in PTASK_TYPES
                and getattr(ctx, "messages_take_time", False)):
            if remaining > 0:
                remaining -= duration
            ret = int(profile.get("ret", 0))
            return t + duration, remaining, _outcome(ret), ret
        return t + remaining, 0.0, _WALLTIME, -1

    def natural(self, job: RunningJob, ctx: ModelContext) -> tuple[float, JobState, int]:
        """Batsim's arithmetic from the start without a walltime. O(tasks)."""
        end, _, state, ret = self._run(job.profile_data, job, job.start, -1.0, ctx)
        return end, state, ret

    def progress(self, job: RunningJob, now: float, ctx: ModelContext) -> dict[str, Any]:
        """Batsim's kill progress: leaf ``progress``, or the current task of a sequence."""
        entry, _ = self._progress(job.profile, job.profile_data, job, job.start, now, ctx)
        return entry

    def _progress(self, name: str, profile: dict[str, Any], job: RunningJob, t: float,
                  now: float, ctx: ModelContext) -> tuple[dict[str, Any], float | None]:
        """Progress entry at ``now`` of ``profile`` started at ``t``, and its end if before."""
        if profile["type"] in SEQUENCE_TYPES:
            seq = [str(s) for s in profile["seq"]]
            entry: dict[str, Any] = {"profile_name": name}
            for _ in range(int(profile.get("repeat", 1))):
                for index, sub in enumerate(seq):
                    sub_profile = ctx.profile_definition(job.workload, sub)
                    sub_entry, end = self._progress(sub, sub_profile, job, t, now, ctx)
                    if end is None:
                        entry.update(current_task_index=index, current_task=sub_entry)
                        return entry, None
                    t = end
            return entry, t
        duration = _leaf_duration(profile, job, ctx)
        if t + duration > now:
            return {"profile_name": name, "progress": (now - t) / duration}, None
        return {"profile_name": name, "progress": 1.0}, t + duration


class SpeedScaledModel(JobModel):
    """Work done at the speed of the allocated machines; re-planned on speed changes.

    A ``delay`` profile is ``delay`` seconds of work at ``reference_speed`` (flop/s)
    done at the slowest allocated machine's speed; ``parallel_homogeneous`` is ``cpu``
    flop per machine, ``parallel_homogeneous_total`` ``cpu / n`` flop per machine, at
    the slowest machine's speed; ``parallel`` is ``cpu[i]`` flop on the i-th machine,
    all executors progressing together (as a SimGrid parallel task does), so the
    slowest executor sets the pace. For parallel profiles this is exactly Batsim's
    computation-only duration; what it adds is that speed changes move the end.
    The walltime caps the end as in Batsim.

    >>> from types import SimpleNamespace
    >>> ctx = SimpleNamespace(speeds=[2e9, 1e9])
    >>> job = SimpleNamespace(profile="p", profile_data={"type": "delay", "delay": 10},
    ...                       alloc=[0, 1], walltime=None, start=0.0, mstate=None)
    >>> model = SpeedScaledModel()
    >>> job.end = model.start(job, 0.0, ctx); job.end
    10.0
    >>> ctx.speeds[1] = 2e9          # at t=4 the slow machine doubles its speed
    >>> model.on_change(job, 4.0, ctx)
    7.0
    """

    name = "speed"
    KINDS: ClassVar[frozenset[str]] = frozenset({"delay", "parallel_homogeneous",
                                                 "parallel_homogeneous_total", "parallel"})

    def __init__(self, reference_speed: float = 1e9) -> None:
        self.reference_speed = reference_speed

    def check(self, workload: str, name: str, profiles: Mapping[str, dict[str, Any]]) -> None:
        """Only delay and (computation-only) parallel profiles carry a work amount."""
        check_profile(workload, name, profiles)
        kind = profiles[name].get("type")
        if kind not in self.KINDS:
            raise InputError(f"the speed-scaled model runs delay and parallel profiles "
                             f"({', '.join(sorted(self.KINDS))}), not {kind!r}",
                             field=f"{workload}!{name}")

    def _rate(self, job: RunningJob, ctx: ModelContext) -> tuple[float, float]:
        """(work, rate) at the current speeds; ``parallel`` counts in start-time seconds."""
        profile = job.profile_data
        kind = profile["type"]
        if kind == "parallel":
            return _leaf_duration(profile, job, ctx), 1.0
        rate = _slowest(job.alloc, ctx.speeds)
        if kind == "delay":
            return float(profile["delay"]) * self.reference_speed, rate
        if kind == "parallel_homogeneous":
            return float(profile["cpu"]), rate
        return float(profile["cpu"]) / len(job.alloc), rate

    def start(self, job: RunningJob, now: float, ctx: ModelContext) -> float:
        """Plan the whole work at the current speeds. Runtime complexity: O(res)."""
        work, rate = self._rate(job, ctx)
        job.mstate = [work, 0.0, rate, now]  # work, done, rate, since
        return self._plan(job, now)

    def on_change(self, job: RunningJob, now: float, ctx: ModelContext) -> float:
        """Bank the work done at the old speed, re-plan the rest. Runtime complexity: O(res)."""
        state = job.mstate
        state[1] += (now - state[3]) * state[2]
        if job.profile_data["type"] == "parallel":  # start-time seconds per second
            state[2] = state[0] / _leaf_duration(job.profile_data, job, ctx)
        else:
            state[2] = _slowest(job.alloc, ctx.speeds)
        state[3] = now
        return self._plan(job, now)

    def _natural_end(self, job: RunningJob, now: float) -> float:
        work, done, rate, _ = job.mstate
        return now + max(work - done, 0.0) / rate

    def _plan(self, job: RunningJob, now: float) -> float:
        natural = self._natural_end(job, now)
        ret = int(job.profile_data.get("ret", 0))
        if job.walltime is not None and natural - job.start >= job.walltime:
            job.outcome, job.return_code = _WALLTIME, -1
            return job.start + job.walltime
        job.outcome, job.return_code = _outcome(ret), ret
        return natural

    def natural(self, job: RunningJob, ctx: ModelContext) -> tuple[float, JobState, int]:
        """The planned end ignoring the walltime, at the speeds of the last re-plan."""
        ret = int(job.profile_data.get("ret", 0))
        return self._natural_end(job, job.mstate[3]), _outcome(ret), ret

    def progress(self, job: RunningJob, now: float, ctx: ModelContext) -> dict[str, Any]:
        """Fraction of the work done at ``now``."""
        work, done, rate, since = job.mstate
        value = (done + (now - since) * rate) / work if work > 0 else 1.0
        return {"profile_name": job.profile, "progress": min(value, 1.0)}


class PlacementModel(JobModel):
    """A runtime on the preferred placement and another elsewhere (seed 001).

    Seed 001 (mixed GPU/CPU racks) gives each job two runtimes: one where it runs best
    and one anywhere else. Here the profile's ``delay`` is the runtime on the preferred
    placement and the job field ``runtime_other`` the runtime off it; which allocations
    are preferred is :func:`batpolicy.platforms.placement.is_preferred` (MPI jobs inside
    one rack or cluster, GPU jobs on GPU machines, a ``preferred`` group), the rule the
    policies use too. A job without ``runtime_other`` runs its delay anywhere. Speeds do
    not matter; the walltime caps the end as in Batsim.

    >>> from types import SimpleNamespace
    >>> from batpolicy.platforms.model import Machine, Platform
    >>> plat = Platform([Machine(0, "a", gpu=True), Machine(1, "b")])
    >>> fields = SimpleNamespace(job_type="gpu", preferred=None, runtime_other=30.0)
    >>> job = SimpleNamespace(profile_data={"type": "delay", "delay": 10}, walltime=None,
    ...                       alloc=[0], fields=fields, start=0.0)
    >>> ctx = SimpleNamespace(platform=plat)
    >>> PlacementModel().start(job, 0.0, ctx), job.mstate
    (10.0, 10.0)
    >>> job.alloc = [1]; PlacementModel().start(job, 0.0, ctx)
    30.0
    """

    name = "placement"

    def check(self, workload: str, name: str, profiles: Mapping[str, dict[str, Any]]) -> None:
        """The runtime on the preferred placement is a ``delay`` profile's delay."""
        check_profile(workload, name, profiles)
        kind = profiles[name].get("type")
        if kind != "delay":
            raise InputError(f"the placement model runs delay profiles (the runtime on the "
                             f"preferred placement), not {kind!r}", field=f"{workload}!{name}")

    def start(self, job: RunningJob, now: float, ctx: ModelContext) -> float:
        """Pick the runtime of this allocation. Runtime complexity: O(groups + res)."""
        runtime = float(job.profile_data["delay"])
        other = job.fields.runtime_other
        if other is not None and not is_preferred(job.fields, job.alloc, ctx.platform):
            runtime = other
        job.mstate = runtime
        ret = int(job.profile_data.get("ret", 0))
        if job.walltime is not None and runtime >= job.walltime:
            job.outcome, job.return_code = _WALLTIME, -1
            return now + job.walltime
        job.outcome, job.return_code = _outcome(ret), ret
        return now + runtime

    def natural(self, job: RunningJob, ctx: ModelContext) -> tuple[float, JobState, int]:
        """Start plus the runtime of the allocation, ignoring the walltime."""
        ret = int(job.profile_data.get("ret", 0))
        return job.start + job.mstate, _outcome(ret), ret

    def progress(self, job: RunningJob, now: float, ctx: ModelContext) -> dict[str, Any]:
        """Fraction of the runtime elapsed at ``now``."""
        runtime = job.mstate
        value = (now - job.start) / runtime if runtime > 0 else 1.0
        return {"profile_name": job.profile, "progress": min(value, 1.0)}
