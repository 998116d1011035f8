"""Moving ends: a simulator-level hook called once per instant, after its starts and ends.

A job model (:mod:`.jobmodels`) plans each job alone. Some runtimes depend on the other
jobs: co-allocated jobs sharing a cluster uplink slow each other down (seed 003 §3.2,
the bandwidth model), jobs sharing a file system... An :class:`InstantModel` sees every
running job at once, after everything that starts or ends at an instant has done so
(all decisions of that instant applied, all completions fired), and may move the
planned end of any of them::

    class InstantModel:
        def after_instant(self, now, running, ctx) -> dict[job_id, new_end]

``running`` maps the id of every running job that will complete on its own (jobs set
RUNNING by CHANGE_JOB_STATE never do) to its :class:`~.records.SimJob`: ``start``,
``alloc``, ``walltime``, ``end`` (current plan), ``fields``, ``profile_data``. ``ctx`` is
the :class:`MovingEnds` part: ``speeds``, ``platform``, ``profile_definition`` and
:meth:`MovingEnds.natural_end`, the end the job's own model planned ignoring the
walltime, where a model starts from.

Rules the engine keeps, whatever the model returns:

- **Walltime kills stay exact.** A new end at or after ``start + walltime`` becomes a
  kill at exactly ``start + walltime`` (``COMPLETED_WALLTIME_REACHED``, return code -1,
  as Batsim); a later move back before it restores the job model's outcome.
- A new end before ``now`` is a bug of the model (:class:`ConfigError`); an end at
  ``now`` completes the job at this instant, after which the hook runs once more.
- Moves apply after the job models' own re-planning (speed changes): a job model's
  :meth:`~.jobmodels.base.JobModel.on_change` overrides an earlier move of the same job.

What a scheduler learns of moved ends: nothing, as with Batsim (which never tells a
scheduler when a job will end). ``ClusterState.expected_end`` stays ``start +
walltime``, what a Batsim scheduler knows. ``batpolicy simulate --expected-ends model``
opts in to a non-Batsim hint, through one documented interface: the listener given to
:meth:`MovingEnds.set_listener` (``Simulator.set_end_hint``) is called after each
instant with every running job whose planned end changed, ``(job_id, end)``, the end
capped by the walltime like the plan; ``simulate`` passes
:meth:`batpolicy.scheduler.dispatch.Dispatcher.move_expected_end`, so the policy's state
changes through its dispatcher, never by a direct write. The messages exchanged are
unchanged, so an external scheduler (``fake-batsim``) gets the same conversation either
way.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Iterable, Mapping
from types import MappingProxyType
from typing import TYPE_CHECKING, Any, ClassVar

from batpolicy.errors import ConfigError
from batpolicy.protocol.types import JobState
from batpolicy.simulator.actors import JobEnd, NextTask, Reactions
from batpolicy.simulator.core import COMPLETION, EventQueue
from batpolicy.simulator.records import SimJob

if TYPE_CHECKING:
    from batpolicy.simulator.books import RunBooks

__all__ = ["EndListener", "InstantModel", "MovingEnds"]

_WALLTIME = JobState.COMPLETED_WALLTIME_REACHED

#: Told ``(job_id, planned end capped by the walltime)`` after each instant where that
#: end changed (``simulate --expected-ends model``). Not a Batsim message.
EndListener = Callable[[str, float], None]


class InstantModel(ABC):
    """Moves the planned ends of running jobs, once per instant (module docstring)."""

    #: Name for error messages.
    name: ClassVar[str] = ""
    #: Job id -> the model's verdict on its last move of that job's end (told to the
    #: listeners of :meth:`MovingEnds.move_end`); empty: none.
    verdicts: Mapping[str, Any] = MappingProxyType({})

    @abstractmethod
    def after_instant(self, now: float, running: Mapping[str, SimJob],
                      ctx: Any) -> dict[str, float]:
        """New (walltime-free) ends of the jobs whose end moves; others are left alone."""


class MovingEnds:
    """Every running job's planned completion, and the once-per-instant hook that moves it.

    :meth:`start` asks the job's model for its end and puts the job's completion on the
    heap; :meth:`reschedule` and :meth:`move_end` move it (the old heap entry goes
    stale). :attr:`dirty` is set when a job starts, ends or is re-planned, only if
    :attr:`moving` (some instant model or a listener is active, so the default run pays
    nothing); the driver then calls :meth:`end_of_instant` before time moves on.
    ``completions`` is who a job's completion event calls back (the driver).
    Instant models get this part as their ``ctx``: ``speeds``, ``platform``,
    ``profile_definition`` (the job models' context, :class:`~.books.RunBooks`) and
    :meth:`natural_end`.
    """

    __slots__ = ("_queue", "_books", "models", "_natural", "_hinted", "dirty", "moving",
                 "_listener", "completions", "speeds", "platform", "profile_definition")

    def __init__(self, queue: EventQueue, books: RunBooks, models: Iterable[Any]) -> None:
        self._queue = queue
        self._books = books
        self.speeds = books.speeds
        self.platform = books.platform
        self.profile_definition = books.profile_definition
        self.models: list[InstantModel] = []
        for model in models:
            if isinstance(model, InstantModel) and all(model is not m for m in self.models):
                self.models.append(model)
        self._natural: dict[str, tuple[float, JobState, int]] = {}
        self._hinted: dict[str, float] = {}
        self._listener: EndListener | None = None
        self.completions: Reactions | None = None
        self.dirty = False
        self.moving = bool(self.models)

    def add_model(self, model: InstantModel) -> None:
        """One more instant model (a job model named by a job's field). O(1)."""
        self.models.append(model)
        self.moving = True

    def set_listener(self, listener: EndListener | None) -> None:
        """Tell ``listener(job_id, end)`` every moved planned end (module docstring)."""
        self._listener = listener
        self.moving = bool(self.models) or listener is not None

    # ------------------------------------------------------------ planning completions
    def start(self, job: SimJob, now: float) -> None:
        """Plan a job starting at ``now`` with its model. Runtime complexity: O(log n).

        A job whose model set ``job.phases`` (a sequence of tasks: the starts of the tasks
        after the first) reaches its completion through one :class:`~.actors.NextTask`
        per task, as Batsim's executor sleeps once per task: the completion then comes
        among its instant's wake-ups where Batsim's does (:mod:`.core`).
        """
        end = job.model.start(job, now, self._books)
        job.end = end
        self.dirty = self.moving
        if job.phases:
            job.end_seq = self._queue.schedule(NextTask(self, job, 0), COMPLETION,
                                               at=job.phases[0])
            return
        job.end_seq = self._queue.schedule(JobEnd(self.completions, job), COMPLETION, at=end)

    def next_task(self, job: SimJob, index: int) -> None:
        """Job ``job``'s executor sleeps for task ``index`` of its phases, or until its end."""
        queue = self._queue
        if index < len(job.phases):
            job.end_seq = queue.schedule(NextTask(self, job, index), COMPLETION,
                                         at=job.phases[index])
        else:
            job.end_seq = queue.schedule(JobEnd(self.completions, job), COMPLETION, at=job.end)

    def reschedule(self, job: SimJob) -> None:
        """Ask the job's model for its new end and move its completion there. O(log n)."""
        end = job.model.on_change(job, self._queue.now, self._books)
        if end != job.end:
            self.dirty = self.moving
            job.end = end
            job.end_seq = self._queue.schedule(JobEnd(self.completions, job), COMPLETION,
                                               at=end)

    def natural_end(self, job: SimJob) -> float:
        """The end ``job``'s own model planned, ignoring the walltime. Runtime complexity: O(1)."""
        known = self._natural.get(job.id)
        if known is None:
            known = self._natural[job.id] = job.model.natural(job, self._books)
        return known[0]

    def end_of_instant(self) -> None:
        """Run the instant models on every running job, move ends, tell the listener.

        Runtime complexity: O(running jobs) plus the models' own cost.
        """
        self.dirty = False
        now = self._queue.now
        running = {job_id: job for job_id, job in self._books.running.items()
                   if job.end_seq >= 0}
        natural = self._natural
        for job_id in [j for j in natural if j not in running]:
            del natural[job_id]
        if self.models:
            view = MappingProxyType(running)
            for model in self.models:
                moves = model.after_instant(now, view, self)
                verdicts = model.verdicts
                for job_id, end in moves.items():
                    job = running.get(job_id)
                    if job is None:
                        raise ConfigError(f"instant model '{model.name}' moved the end of "
                                          f"'{job_id}', which is not running (t={now})")
                    self.move_end(job, end, model.name, verdicts.get(job_id))
        listener = self._listener
        if listener is not None:
            hinted = self._hinted
            for job_id in [j for j in hinted if j not in running]:
                del hinted[job_id]
            for job_id, job in running.items():
                if hinted.get(job_id) != job.end:
                    hinted[job_id] = job.end
                    listener(job_id, job.end)

    def move_end(self, job: SimJob, end: float, who: str = "a model",
                 in_time: bool | None = None) -> None:
        """Plan ``job`` to complete at ``end``, or be killed at start + walltime before.

        ``in_time``: the model's verdict, if it keeps the walltime's timer itself
        (:mod:`.ptask`): True, the job completes at ``end`` even if that is its walltime
        (a task ending at the update its timer ends); False, the walltime is reached, at
        ``end`` if that is before start + walltime (SimGrid's timer, a sleep, ends up to
        1e-9 s early at another action's update), else at start + walltime.

        Runtime complexity: O(log n) (one heap push; the old entry goes stale).
        """
        now = self._queue.now
        if not end >= now or math.isinf(end):
            raise ConfigError(f"{who} moved the end of '{job.id}' to {end}, not a time in "
                              f"[now={now}, inf)")
        self.natural_end(job)  # the job model's outcome, kept before any move
        _, outcome, code = self._natural[job.id]
        if job.walltime is not None and (in_time is False or (
                in_time is None and end - job.start >= job.walltime)):
            # the model's timer may end a few ulps early, at its clock's update
            end, outcome, code = (min(end, job.start + job.walltime) if in_time is False
                                  else job.start + job.walltime), _WALLTIME, -1
            # start + walltime may round a few ulps before now (the model's clock is a sum
            # of its updates): the timer has fired, the job ends now
            end = max(end, now)
        if end == job.end and outcome is job.outcome:
            return
        job.end = end
        job.outcome = outcome
        job.return_code = code
        job.end_seq = self._queue.schedule(JobEnd(self.completions, job), COMPLETION, at=end)
