"""The ``ptask`` job model: Batsim's jobs on SimGrid's parallel-task model.

What real Batsim 4.2.1 does with a job (``execute_parallel_task`` on ``ptask_L07``):
every task of a job that communicates, runs several executors on one machine
(``mapping`` in EXECUTE_JOB), shares machines (``--enable-compute-sharing``), uses
storage (``parallel_homogeneous_pfs``, ``data_staging``) or comes with an
``additional_io_job`` (merged into its tasks, :mod:`.io_job`) is a SimGrid parallel task
sharing CPUs and links with the others (:mod:`.l07`, :mod:`.runner`). Any other job
runs alone on its machines and keeps the closed form of
:class:`~batpolicy.simulator.jobmodels.base.ProfileModel` (the same durations, no solve).

With ``-E`` the energy part follows the tasks' loads (:class:`~.energy.host_energy.TaskPower` on
the shared model, the loads handed over after each instant), and every sequence that
computes runs on the shared model, task by task, as SimGrid's host-energy plugin sees it.

The model is also an instant model (:mod:`.simulator.instant`): after each instant it moves the
shared model to now, starts the tasks of the jobs started then, and completes the jobs
whose last task ended; it wakes the simulator at the model's next event (a task end, a
latency paid, a sleep's end) with an event of its own. A job's planned end stays its
walltime kill (or far away) until its tasks end: the engine keeps the walltime exact.

Batsim's own messages (:meth:`PtaskModel.message_network`): on a platform whose
messages take time, the latency driver (:mod:`.simulator.latency`) sends each protocol message
through this model, as SimGrid does: a 1-byte put on the server's mailbox is a
communication of the L07 model (``ipp.cpp``, ``CommImpl::start``,
``NetworkL07Model::communicate``) from the sender's host to the master host, sharing
links with the running tasks, slowing them while it lasts, and seen by the host-energy
plugin like any other action. Batsim's actors' sleeps (:meth:`PtaskModel.actor_sleep`)
are sleep actions of the same model, so that SimGrid's clock, the sum of the model's
update deltas, dates everything the actors do.

``usage_trace`` profiles (:mod:`.usage_trace`) always run on the shared model: each rank
of the trace a sequence of one-host tasks on its host, then a 4-byte message to the job
actor on the allocation's first machine (:class:`~.runner.JobRunner`). Batsim checks the
trace file when it loads the workload (:meth:`PtaskModel.read_files`); the rank files
are read when a job first runs the profile.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping
from typing import Any, ClassVar

from batpolicy.errors import InputError
from batpolicy.platforms.routes import UnsupportedRoute, read_routes
from batpolicy.protocol.types import JobState
from batpolicy.simulator.core import COMPLETION
from batpolicy.simulator.energy.host_energy import TaskPower, profile_load
from batpolicy.simulator.instant import InstantModel
from batpolicy.simulator.jobmodels.base import JobModel, ProfileModel
from batpolicy.simulator.jobmodels.ptask.l07 import L07Model
from batpolicy.simulator.jobmodels.ptask.programs import JobPrograms
from batpolicy.simulator.jobmodels.ptask.runner import JobRunner, progress_tree, unstarted_leaf
from batpolicy.simulator.jobmodels.ptask.tasks import (
    SEQUENCES,
    program,
)

__all__ = ["PtaskModel"]

_EMPTY = {"type": "delay", "delay": 0}
#: A planned end no job reaches: the end of a job without walltime until its tasks end.
FAR = 1e300
_SUCCESS = JobState.COMPLETED_SUCCESSFULLY
_FAILED = JobState.COMPLETED_FAILED
_WALLTIME = JobState.COMPLETED_WALLTIME_REACHED


class _WakeUp:
    """The model's next event in the simulator's queue.

    It only makes the instant dirty, so that the moving-ends part runs the model's
    :meth:`~PtaskModel.after_instant`.
    """

    __slots__ = ("ends", "seq", "queue", "before", "fired")

    def __init__(self) -> None:
        self.ends: Any = None  # the MovingEnds part, known from the first instant
        self.seq = -1
        self.queue: Any = None  # the simulator's queue, known from the first instant
        #: Called as the model's next update comes (the latency driver finishes the
        #: scheduling rounds of the last one); None: nobody.
        self.before: Callable[[], None] | None = None
        self.fired = False  # since the model's last update

    def postpone(self, due: float) -> None:
        """Wait for its own date, a later update of the solver.

        The latency driver took it early, with events of a date less than 1e-9 s before
        (its rounding window for dates computed apart).
        """
        self.seq = self.queue.schedule(self, COMPLETION, at=due)

    def live(self, seq: int) -> bool:
        """Only the latest wake-up counts."""
        return seq == self.seq

    def fire(self) -> None:
        """The model's event is now."""
        self.fired = True
        self.ends.dirty = True


class _Message:
    """A protocol message waiting for the instant's end to enter the shared model."""

    __slots__ = ("src", "on_arrival")

    def __init__(self, src: int, on_arrival: Callable[[], None]) -> None:
        self.src = src
        self.on_arrival = on_arrival


class _Sleep:
    """An actor's sleep waiting for the instant's end to start on the shared model."""

    __slots__ = ("duration", "on_end")

    def __init__(self, duration: float, on_end: Callable[[], None]) -> None:
        self.duration = duration
        self.on_end = on_end


class _Switch:
    """A machine's switch (its one flop) waiting for the instant's end to start."""

    __slots__ = ("machine", "speed", "on_end")

    def __init__(self, machine: int, speed: float, on_end: Callable[[], None]) -> None:
        self.machine = machine
        self.speed = speed
        self.on_end = on_end


class _Arrival:
    """A message done: its receiver and sender wake up (a heap event of the instant)."""

    __slots__ = ("on_arrival", "queue")

    def __init__(self, on_arrival: Callable[[], None], queue: Any = None) -> None:
        self.on_arrival = on_arrival
        #: Set: first step back behind the events scheduled since (the job ends that
        #: SimGrid handled before this message, their actions being older).
        self.queue = queue

    def live(self, seq: int) -> bool:
        """Always current."""
        return True

    def fire(self) -> None:
        """The message reached the server (or steps back once, see :attr:`queue`)."""
        queue = self.queue
        if queue is not None:
            self.queue = None
            queue.schedule(self, COMPLETION, at=queue.now)
            return
        self.on_arrival()


def _platform_runner(ctx: Any, programs: JobPrograms, master: str | None
                     ) -> tuple[JobRunner, int]:
    """The runner of a run with a platform file, and the master host's index (-1: none).

    The hosts are the compute machines, the storage ones, then the master when Batsim's
    messages use the model; their CPUs and routes are the platform's (:func:`read_routes`).
    """
    platform = ctx.platform
    try:
        routes = read_routes(platform.source)
    except UnsupportedRoute as exc:
        raise InputError(f"the parallel-task model cannot route this platform: {exc}",
                         field=str(platform.source)) from None
    compute = list(ctx.machines.names)
    names = compute + [m.name for m in platform.storage]
    programs.storage_ids = list(range(len(compute), len(names)))
    master_id = -1
    if master is not None:
        master_id = len(names)
        names.append(master)
    missing = [n for n in names if n not in routes.host_cpu]
    if missing:
        raise InputError(f"hosts {missing[:5]} are not in the platform file",
                         field=str(platform.source))

    def route(a: int, b: int) -> list[Any]:
        """The links from machine ``a`` to machine ``b``."""
        return routes.links(names[a], names[b])

    cpus = [routes.host_cpu[n] for n in names]
    programs.cores = [int(cores) for _, cores in cpus]
    return JobRunner(L07Model(cpus, route), ctx.queue.now), master_id


def _first_task_progress(job: Any, ctx: Any) -> dict[str, Any]:
    """The kill progress of a job in the first instant of its first task."""
    leaves = program(job.profile, job.profile_data,
                     lambda n: ctx.profile_definition(job.workload, n))
    if not leaves:
        return {"profile_name": job.profile, "progress": 0.0}
    path, name, leaf = leaves[0]
    if leaf.get("type") == "usage_trace":
        return progress_tree(path, unstarted_leaf(name))
    return progress_tree(path, {"profile_name": name, "progress": 0.0})


class PtaskModel(JobModel, InstantModel):
    """Jobs as SimGrid parallel tasks (module docstring).

    ``compute_sharing``: jobs may share machines (``--enable-compute-sharing``), so every
    job is a parallel task.
    """

    name: ClassVar[str] = "ptask"
    #: EXECUTE_JOB's additional_io_job is merged into the job's tasks (:mod:`.io_job`).
    runs_io_jobs: ClassVar[bool] = True

    def __init__(self, compute_sharing: bool = False) -> None:
        self.compute_sharing = compute_sharing
        self._closed = ProfileModel()
        self._runner: JobRunner | None = None
        self._pending: list[Any] = []
        self._mine: dict[str, Any] = {}  # the jobs run on the shared model, by id
        self._reported: set[str] = set()  # walltime-killed jobs whose actor has ended
        self._wake = _WakeUp()
        self._queue: Any = None
        self._power: TaskPower | None = None  # with -E: the energy part's listener
        self._master: str | None = None  # the master host's name, once messages use us
        self._master_id = -1  # its host index in the shared model
        self._ends: Any = None  # the moving-ends part, once messages use us
        #: Of the jobs ended at the last instant, whether each completed in time (True,
        #: even at its walltime) or reached its walltime (read by the moving-ends part).
        self.verdicts: dict[str, bool] = {}
        #: The profiles' checks and the tasks each job runs.
        self._programs = JobPrograms()

    # ------------------------------------------------------------------ checks
    def read_files(self, workload: str, source: str | None,
                   profiles: Mapping[str, Mapping[str, Any]]) -> None:
        """Batsim's checks of the files a workload's profiles name (:class:`JobPrograms`)."""
        self._programs.read_files(workload, source, profiles)

    def check(self, workload: str, name: str, profiles: Mapping[str, dict[str, Any]]) -> None:
        """Batsim's checks of the profile and of its tasks' amounts."""
        self._programs.check(workload, name, profiles)

    def check_io_job(self, job: Any, io_name: str, ctx: Any,
                     io_profile: Mapping[str, Any]) -> None:
        """EXECUTE_JOB's ``additional_io_job`` can be merged into each task of ``job``."""
        self._programs.check_io_job(job, io_name, ctx, io_profile)

    # ------------------------------------------------------------------ the shared model
    def _setup(self, ctx: Any) -> JobRunner:
        """The shared model of the run, from the RunBooks (``ctx``) on the first job.

        Without a platform file (``--nb-res N``: machines and nothing else) the machines
        have no link between them: data moves at once, CPUs are still shared.
        """
        if self._runner is None:
            platform = ctx.platform
            self._queue = self._wake.queue = ctx.queue
            if platform.source is None:
                cpus = [(float(speed), 1) for speed in ctx.machines.speeds]
                self._programs.cores = [1] * len(cpus)
                self._runner = JobRunner(L07Model(cpus, lambda a, b: []), ctx.queue.now)
                self._listen(ctx)
                return self._runner
            self._runner, self._master_id = _platform_runner(ctx, self._programs,
                                                             self._master)
            self._listen(ctx)
        return self._runner

    def message_network(self, books: Any, ends: Any, master: str
                        ) -> Callable[[int | None, Callable[[], None]], None] | None:
        """Carry Batsim's messages on the shared model (module docstring); None: cannot.

        ``books`` is the job models' context, ``ends`` the moving-ends part, ``master``
        the server's host. The function returned sends a 1-byte message from machine
        ``src`` (None: the master host) to the master host at the current time and calls
        ``on_arrival`` (a heap event of this instant) when it is done.
        """
        if books.platform.source is None or self._runner is not None:
            return None
        self._master = master
        self._ends = ends
        self._setup(books)
        self._wake.ends = ends
        energy = getattr(books, "energy", None)
        if energy is not None:
            energy.execute = self._switch
        return self._send

    def before_update(self, callback: Callable[[], None]) -> None:
        """Call ``callback`` as each update of the shared model comes, before it is made.

        SimGrid runs every scheduling round of one date before its next solve, even when
        the solve's delta rounds to nothing on the clock.
        """
        self._wake.before = callback

    def solver_updates(self) -> int:
        """How many updates the shared model has made (two may share one date).

        SimGrid's clock is a sum of the solves' deltas (``EngineImpl::solve``), so a delta
        under half an ulp of the clock makes an update at the date of the one before it.
        """
        return 0 if self._runner is None else self._runner.updates

    def _switch(self, machine: int, speed: float, on_end: Callable[[], None]) -> None:
        """A machine's switch computes its one flop at ``speed`` (``pstate.cpp``).

        ``switch_on_machine_process`` / ``switch_off_machine_process``: ``execute(1)`` in
        the switching pstate, a task of the shared model started at this instant's end.
        """
        self._pending.append(_Switch(machine, speed, on_end))
        self._ends.dirty = True

    def _send(self, src: int | None, on_arrival: Callable[[], None]) -> None:
        """A message from machine ``src`` (None: the master) starts at this instant's end."""
        self._pending.append(_Message(self._master_id if src is None else src, on_arrival))
        self._ends.dirty = True

    def actor_sleep(self, duration: float, on_end: Callable[[], None]) -> None:
        """An actor's sleep from now (``this_actor::sleep_for``), once messages use us.

        A sleep action of the shared model (``CpuL07::sleep``), started at this instant's
        end like a message; ``on_end`` is a heap event of the instant it ends.
        """
        self._pending.append(_Sleep(duration, on_end))
        self._ends.dirty = True

    def _listen(self, ctx: Any) -> None:
        """With ``-E``, the energy part follows the shared model's tasks."""
        energy = getattr(ctx, "energy", None)
        if energy is not None and self._runner is not None:
            self._power = TaskPower(energy, self._runner.model)
            self._runner.on_sleep_end = self._sleep_ended

    def _sleep_ended(self, job_id: str) -> None:
        """A delay task ended: SimGrid updates the energy of the job actor's host.

        The actor runs on the allocation's first machine (Batsim's ``server.cpp``); its
        sleep is an action of that host's CPU (``CpuL07::sleep``).
        """
        job = self._mine.get(job_id)
        if job is not None and self._power is not None and job.alloc:
            self._power.touch_host(job.alloc.min())

    def host_load(self, job: Any, ctx: Any) -> dict[int, float] | None:
        """The power model's load of a closed-form job; None: :class:`TaskPower` tells it."""
        if job.id in self._mine:
            return None
        return profile_load(job, ctx, ctx.speeds)

    # ------------------------------------------------------------------ JobModel
    def start(self, job: Any, now: float, ctx: Any) -> float:
        """A closed-form job, or a parallel-task job whose end the model will set."""
        if not self._programs.needs_shared_model(job, ctx, self._master is not None,
                                                 self.compute_sharing):
            kind = job.profile_data.get("type")
            if kind == "parallel" or kind in SEQUENCES:
                self._programs.leaves(job, ctx)  # Batsim's size checks, as it starts
            return self._closed.start(job, now, ctx)
        self._setup(ctx)
        self._mine[job.id] = job
        self._pending.append(job)
        # the walltime too is the shared model's (JobRunner's deadline): a task ending at
        # the update its timer ends completes, as in SimGrid
        job.outcome, job.return_code = self._programs.natural_outcome(job, ctx)
        return FAR

    def natural(self, job: Any, ctx: Any) -> tuple[float, JobState, int]:
        """Far away until the tasks end (the model moves the end), with the job's outcome."""
        if job.id not in self._mine:
            return self._closed.natural(job, ctx)
        outcome, ret = self._programs.natural_outcome(job, ctx)
        return FAR, outcome, ret

    def progress(self, job: Any, now: float, ctx: Any) -> dict[str, Any]:
        """Batsim's kill progress of the job's current task.

        A job started at this instant, not yet in the runner (it joins it after the
        instant), is killed in its first task at progress 0: Batsim's job actor, created
        by EXECUTE_JOB before the KILL_JOB's killer actor, has started that task when the
        killer runs (``execute_job_process`` → ``execute_task``, ``killer_process``), so
        a sequence's progress is its tree and a parallel task is cancelled (-2).
        """
        runner = self._runner
        if job.id not in self._mine or runner is None:
            return self._closed.progress(job, now, ctx)
        if job.id not in runner:
            return _first_task_progress(job, ctx)
        return runner.progress(job.id, job.profile, now)

    def in_solver(self, job: Any) -> bool:
        """Whether the job ran on the shared model (its end is one of the solver's dates).

        Once Batsim's messages go through the model every job does, even one an instant
        since its end has already dropped from the model's books.
        """
        return self._master is not None or job.id in self._mine

    def job_reported(self, job: Any, now: float) -> None:
        """The job's actor has ended: its JOB_COMPLETED reached the server (driver's call).

        Batsim's job actor, its walltime reached, stops waiting for its parallel task but
        does not cancel it: it sends JOB_COMPLETED (a blocking put from the job's first
        machine) and SimGrid cancels the task when the actor ends
        (``execute_job_process``, ``ActorImpl::cleanup_from_self``). Until then the
        task keeps its share of the CPUs and links.
        """
        runner = self._runner
        if runner is not None and job.id in self._mine and job.id in runner:
            self._reported.add(job.id)
            wake = self._wake
            if wake.ends is not None:
                wake.seq = self._queue.schedule(wake, COMPLETION, at=now)

    # ------------------------------------------------------------------ InstantModel
    def after_instant(self, now: float, running: Mapping[str, Any], ctx: Any
                      ) -> dict[str, float]:
        """Move the model to ``now``, start and stop tasks, end the jobs done now."""
        runner = self._runner
        if runner is None:
            return {}
        wake = self._wake
        if wake.fired:  # the model's next update: the last one's rounds are over
            wake.fired = False
            if wake.before is not None:
                wake.before()
        if self._power is not None and runner.update_due(now):
            # only a model update brings in the rates solved after the last one: a job's
            # actor ending at that update's date (job_reported: its put done, SimGrid
            # cancels its task, ActorImpl::cleanup_from_self) charges its hosts at the
            # rates before it (host_energy.cpp, on_action_state_change)
            self._power.update_begins()
        done = runner.advance_to(now)
        for job_id in [j for j in runner.runs() if j not in running]:
            job = self._mine.get(job_id)
            if job is not None and job.state is _WALLTIME and job_id not in self._reported:
                continue  # its task runs on until the job's actor ends (job_reported)
            runner.cancel(job_id)  # killed, or its walltime reached and reported
        for job_id in [j for j in self._mine if j not in running and j not in runner]:
            del self._mine[job_id]
            self._programs.forget(job_id)
            self._reported.discard(job_id)
        pending, self._pending = self._pending, []
        for job in pending:
            if type(job) is _Message:
                runner.actors.send(job.src, self._master_id, 1.0, job.on_arrival)
            elif type(job) is _Sleep:
                runner.actors.sleep(job.duration, job.on_end)
            elif type(job) is _Switch:
                runner.actors.execute(job.machine, 1.0, job.speed, job.on_end)
            elif job.id in running:
                done.extend(runner.start(job.id, self._programs.leaves(job, ctx), None
                                         if job.walltime is None else job.start + job.walltime,
                                         job.walltime))
        queue = self._queue
        for on_arrival, after_task in runner.actors.arrived():
            # after a task that ended first: behind the job ends this instant schedules
            queue.schedule(_Arrival(on_arrival, queue if after_task else None), COMPLETION,
                           at=now)
        at = runner.next_time()
        if self._power is not None:
            self._power.instant_done()
        if at != float("inf"):
            wake = self._wake
            wake.ends = ctx
            wake.seq = self._queue.schedule(wake, COMPLETION, at=at)
        moves = {job_id: now for job_id, _ in done if job_id in running}
        verdicts = self.verdicts = dict.fromkeys(moves, True)
        for job_id in runner.timed_out():
            job = running.get(job_id)
            if job is not None:
                # with Batsim's messages on the model its clock is SimGrid's: the job
                # actor's timer ends at this update; else killed at start + walltime
                moves[job_id] = now if self._master is not None else max(
                    now, job.start + job.walltime)
                verdicts[job_id] = False
        if len(moves) > 1:
            # the job actors report in SimGrid's order of the update; a job done as it
            # started (no task) after them
            order = runner.end_order()
            last = len(order)
            moves = dict(sorted(moves.items(), key=lambda item: order.get(item[0], last)))
        return moves
