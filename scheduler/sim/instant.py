"""The per-instant job-model hook: ends that depend on every job running at an instant.

Issue 10, interface C: ``InstantModel.after_instant(now, running, ctx) -> {job_id:
new_end}``, called once per simulated instant after all starts and ends of that
instant (the engine calls :func:`run_after_instant` in one place, just before moving to
the next instant). The bandwidth-centric co-allocation model (Jones et al. 2005,
§3.5-§3.7) needs it: a job's slowdown depends on every co-allocated job sharing its
links, and recomputing once per instant rather than after each start or end gives the
same ends (nothing runs between two events of one instant) at a fraction of the cost.

Minimal local version written by the co-allocation work; the job-models work owns the
interface and may replace this module (same signature).
"""

from __future__ import annotations

from collections.abc import Iterable, Mapping
from typing import Any, Protocol, runtime_checkable

__all__ = ["InstantModel", "instant_models", "run_after_instant"]


@runtime_checkable
class InstantModel(Protocol):
    """A job model whose ends are re-planned once per instant."""

    def after_instant(self, now: float, running: Mapping[str, Any],
                      ctx: Any) -> dict[str, float]:
        """The running jobs whose end moved, with their new end."""


def instant_models(models: Iterable[Any]) -> list[Any]:
    """The distinct models among ``models`` that have an ``after_instant`` hook.

    >>> class M:
    ...     def after_instant(self, now, running, ctx): return {}
    >>> m = M()
    >>> len(instant_models([m, object(), m]))
    1
    """
    seen: dict[int, Any] = {}
    for model in models:
        if isinstance(model, InstantModel):
            seen.setdefault(id(model), model)
    return list(seen.values())


def run_after_instant(sim: Any, models: Iterable[Any], running: Mapping[str, Any]) -> None:
    """Ask each model which ends of ``running`` moved at ``sim.now``; move them in the heap.

    The simulator's ``reschedule`` asks the job's model (``on_change``) for the end, so
    the heap keeps one live completion per job. Runtime complexity: the models' own,
    plus O(log n) per moved end.
    """
    now = sim.now
    for model in models:
        for job_id in model.after_instant(now, running, sim):
            job = running.get(job_id)
            if job is not None and job.end_seq >= 0:
                sim.reschedule(job)
