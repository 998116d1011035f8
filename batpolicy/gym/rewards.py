"""Rewards of the scheduling environment: per step, summing to an episode's metric.

A reward is any callable ``reward(outcome) -> float`` over a :class:`StepOutcome` (what
happened between two decisions). The built-in ones are chosen so that an episode's
return is minus (or plus) the figure ``metrics.json`` reports for the run, over the
episode's ``nb_jobs`` jobs (docs/metrics.md), as RLScheduler's reward is its metric
(Zhang et al., SC 2020, §3.4) but paid as jobs end instead of only at the end:

- ``bsld`` (default): minus each ended job's bounded slowdown
  ``max((wait + run) / max(run, tau), 1)`` (Feitelson et al., JSSPP 1997, §5) divided by
  ``nb_jobs``: the return is minus the mean bounded slowdown when every job runs;
- ``waiting``: minus each started job's waiting time in hours, over ``nb_jobs``;
- ``tardiness``: minus each ended job's tardiness ``max(0, end - deadline)`` in hours,
  over ``nb_jobs`` (jobs without a deadline add nothing);
- ``utilisation``: the run's utilisation, paid at the last step (0 before);
- ``energy``: minus the energy consumed since the previous step in megajoules (Batsim's
  ``consumed_joules``, from the first submission to the last job end), with ``-E``
  platforms (``energy=True``); an error otherwise.
"""

from __future__ import annotations

from collections.abc import Callable, Mapping, Sequence
from dataclasses import dataclass
from typing import Any

from batpolicy.errors import ConfigError
from batpolicy.io.result import JobRecord

__all__ = ["REWARDS", "Reward", "StepOutcome", "make_reward"]


@dataclass(slots=True)
class StepOutcome:
    """What happened since the previous decision (or the episode's start)."""

    #: Jobs that ended since (completed, killed or rejected), as jobs.csv rows.
    records: Sequence[JobRecord]
    #: Simulated time of the previous decision and of this one (or of the end).
    before: float
    now: float
    #: Jobs in the episode's workload, and the bounded slowdown's tau.
    nb_jobs: int
    tau: float
    #: Energy consumed so far in joules, Batsim's ``consumed_joules``; None without -E.
    energy_joules: float | None
    #: The episode ended at this step; then ``metrics`` holds metrics.json's content.
    final: bool = False
    metrics: Mapping[str, Any] | None = None


Reward = Callable[[StepOutcome], float]


def bounded_slowdown(outcome: StepOutcome) -> float:
    """Minus the ended jobs' bounded slowdowns over the episode's jobs."""
    total = 0.0
    tau = outcome.tau
    for r in outcome.records:
        if r.start is None:
            continue
        run = r.runtime or 0.0
        total += max((r.start - r.submission_time + run) / max(run, tau), 1.0)
    return -total / max(outcome.nb_jobs, 1)


def waiting_time(outcome: StepOutcome) -> float:
    """Minus the ended jobs' waiting times (hours) over the episode's jobs."""
    total = sum(r.start - r.submission_time for r in outcome.records if r.start is not None)
    return -total / 3600.0 / max(outcome.nb_jobs, 1)


def tardiness(outcome: StepOutcome) -> float:
    """Minus the ended jobs' tardiness (hours) over the episode's jobs."""
    total = 0.0
    for r in outcome.records:
        deadline = r.fields.deadline
        end = r.completion_time
        if deadline is not None and end is not None:
            total += max(end - deadline, 0.0)
    return -total / 3600.0 / max(outcome.nb_jobs, 1)


def utilisation(outcome: StepOutcome) -> float:
    """The run's utilisation at the last step, 0 before."""
    if not outcome.final or outcome.metrics is None:
        return 0.0
    return float(outcome.metrics.get("utilization", 0.0))


class EnergySpent:
    """Minus the energy consumed since the previous step, in megajoules (-E only)."""

    def __init__(self) -> None:
        self._last = 0.0

    def __call__(self, outcome: StepOutcome) -> float:
        """The difference with the previous step's total."""
        if outcome.energy_joules is None:
            raise ConfigError("reward 'energy' needs energy=True and a platform with "
                              "wattage_per_state properties (Batsim's -E)")
        spent = outcome.energy_joules - self._last
        self._last = outcome.energy_joules
        return -spent / 1e6


#: Built-in rewards by name (``EnergySpent`` keeps a total: a new one per episode).
REWARDS: Mapping[str, Callable[[], Reward]] = {
    "bsld": lambda: bounded_slowdown,
    "waiting": lambda: waiting_time,
    "tardiness": lambda: tardiness,
    "utilisation": lambda: utilisation,
    "utilization": lambda: utilisation,
    "energy": EnergySpent,
}


def make_reward(spec: str | Reward) -> Reward:
    """A reward from its name or a callable (returned as is).

    >>> make_reward("bsld").__name__
    'bounded_slowdown'
    """
    if callable(spec):
        return spec
    try:
        return REWARDS[spec]()
    except (KeyError, TypeError):
        raise ConfigError(f"unknown reward {spec!r} (known: {', '.join(REWARDS)}, or a "
                          "callable taking a StepOutcome)") from None
