"""Moving ends: a simulator-level hook called once per instant, after its starts and ends.

A job model (:mod:`.models`) plans each job alone. Some runtimes depend on the other
jobs: co-allocated jobs sharing a cluster uplink slow each other down (seed 003 §3.2,
the bandwidth model), jobs sharing a file system... An :class:`InstantModel` sees every
running job at once, after everything that starts or ends at an instant has done so
(all decisions of that instant applied, all completions fired), and may move the
planned end of any of them::

    class InstantModel:
        def after_instant(self, now, running, ctx) -> dict[job_id, new_end]

``running`` maps the id of every running job that will complete on its own (jobs set
RUNNING by CHANGE_JOB_STATE never do) to its :class:`~.bookkeeping.SimJob`: ``start``,
``alloc``, ``walltime``, ``end`` (current plan), ``fields``, ``profile_data``. ``ctx`` is
the simulator: ``speeds``, ``platform``, ``profile_definition`` and
:meth:`MovingEnds.natural_end`, the end the job's own model planned ignoring the
walltime, where a model starts from.

Rules the engine keeps, whatever the model returns:

- **Walltime kills stay exact.** A new end at or after ``start + walltime`` becomes a
  kill at exactly ``start + walltime`` (``COMPLETED_WALLTIME_REACHED``, return code -1,
  as Batsim); a later move back before it restores the job model's outcome.
- A new end before ``now`` is a bug of the model (:class:`ConfigError`); an end at
  ``now`` completes the job at this instant, after which the hook runs once more.
- Moves apply after the job models' own re-planning (speed changes): a job model's
  :meth:`~.models.JobModel.on_change` overrides an earlier move of the same job.

What a scheduler learns of moved ends: nothing, as with Batsim (which never tells a
scheduler when a job will end). ``ClusterState.expected_end`` stays ``start +
walltime``, what a Batsim scheduler knows. ``batpolicy simulate --expected-ends model``
opts in to a non-Batsim hint: after each instant the simulator calls
:attr:`MovingEnds.on_end_moved` with every running job whose planned end changed, and
``simulate`` moves that job's expected end in the policy's state (capped by the
walltime, like the plan). The messages exchanged are unchanged, so an external
scheduler (``fake-batsim``) gets the same conversation either way.
"""

from __future__ import annotations

import math
from abc import ABC, abstractmethod
from collections.abc import Callable, Mapping
from types import MappingProxyType
from typing import Any, ClassVar

from batpolicy.errors import ConfigError
from batpolicy.protocol.types import JobState
from batpolicy.scheduler.sim.actors import JobEnd
from batpolicy.scheduler.sim.bookkeeping import SimJob
from batpolicy.scheduler.sim.core import COMPLETION

__all__ = ["InstantModel", "MovingEnds"]

_WALLTIME = JobState.COMPLETED_WALLTIME_REACHED


class InstantModel(ABC):
    """Moves the planned ends of running jobs, once per instant (module docstring)."""

    #: Name for error messages.
    name: ClassVar[str] = ""

    @abstractmethod
    def after_instant(self, now: float, running: Mapping[str, SimJob],
                      ctx: Any) -> dict[str, float]:
        """New (walltime-free) ends of the jobs whose end moves; others are left alone."""


class MovingEnds:
    """The once-per-instant hook of :class:`Simulator` (a mixin; state lives in the engine).

    The engine sets ``_dirty`` when a job starts, ends or is re-planned (only if
    ``_moving``: some instant model or the end hint is active, so the default run pays
    nothing) and calls :meth:`_end_of_instant` before time moves on.
    """

    #: Called with (job id, planned end capped by the walltime) after each instant where
    #: that end changed; set by ``simulate --expected-ends model``. Not a Batsim message.
    on_end_moved: Callable[[str, float], None] | None = None

    def _init_moving_ends(self, models: list[Any]) -> None:
        """Collect the instant models (options and job models that are also one)."""
        seen: list[InstantModel] = []
        for model in models:
            if isinstance(model, InstantModel) and all(model is not m for m in seen):
                seen.append(model)
        self._instant_models = seen
        self._natural: dict[str, tuple[float, JobState, int]] = {}
        self._hinted: dict[str, float] = {}
        self._dirty = False
        self._moving = bool(seen)

    def set_end_hint(self, callback: Callable[[str, float], None] | None) -> None:
        """Tell ``callback(job_id, end)`` every moved planned end (see module docstring)."""
        self.on_end_moved = callback
        self._moving = bool(self._instant_models) or callback is not None

    def natural_end(self, job: SimJob) -> float:
        """The end ``job``'s own model planned, ignoring the walltime. Runtime complexity: O(1)."""
        known = self._natural.get(job.id)
        if known is None:
            known = self._natural[job.id] = job.model.natural(job, self)
        return known[0]

    def _end_of_instant(self) -> None:
        """Run the instant models on every running job, move ends, send the hints.

        Runtime complexity: O(running jobs) plus the models' own cost.
        """
        self._dirty = False
        now = self._queue.now  # type: ignore[attr-defined]
        running = {job_id: job for job_id, job in self._running.items()  # type: ignore[attr-defined]
                   if job.end_seq >= 0}
        natural = self._natural
        for job_id in [j for j in natural if j not in running]:
            del natural[job_id]
        if self._instant_models:
            view = MappingProxyType(running)
            for model in self._instant_models:
                moves = model.after_instant(now, view, self)
                for job_id, end in moves.items():
                    job = running.get(job_id)
                    if job is None:
                        raise ConfigError(f"instant model '{model.name}' moved the end of "
                                          f"'{job_id}', which is not running (t={now})")
                    self.move_end(job, end, model.name)
        if self.on_end_moved is not None:
            hinted = self._hinted
            for job_id in [j for j in hinted if j not in running]:
                del hinted[job_id]
            for job_id, job in running.items():
                if hinted.get(job_id) != job.end:
                    hinted[job_id] = job.end
                    self.on_end_moved(job_id, job.end)

    def move_end(self, job: SimJob, end: float, who: str = "a model") -> None:
        """Plan ``job`` to complete at ``end``, or be killed at start + walltime before.

        Runtime complexity: O(log n) (one heap push; the old entry goes stale).
        """
        now = self._queue.now  # type: ignore[attr-defined]
        if not end >= now or math.isinf(end):
            raise ConfigError(f"{who} moved the end of '{job.id}' to {end}, not a time in "
                              f"[now={now}, inf)")
        self.natural_end(job)  # the job model's outcome, kept before any move
        _, outcome, code = self._natural[job.id]
        if job.walltime is not None and end - job.start >= job.walltime:
            end, outcome, code = job.start + job.walltime, _WALLTIME, -1
        if end == job.end and outcome is job.outcome:
            return
        job.end = end
        job.outcome = outcome
        job.return_code = code
        job.end_seq = self._queue.schedule(JobEnd(self, job), COMPLETION,  # type: ignore
                                           at=end)
