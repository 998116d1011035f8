"""The policy contract: what a driver asks of a policy, and the parameters it declares.

A policy is a pure decider. The driver (the daemon or the embedded simulator) applies
every event of a Batsim message to the :class:`~batpolicy.scheduler.state.ClusterState`,
calls the matching hook after each one, then calls :meth:`Policy.decide` once, and
checks every returned decision before applying it. Hooks may return decisions too
(they are sent before those of ``decide``, in order); most policies only update their
own bookkeeping in hooks (queue, counters) and answer in ``decide``.

Nothing in a policy knows which driver runs it: no sockets, no clocks, no JSON.
Hooks and ``decide`` receive a :class:`~batpolicy.scheduler.view.PolicyView` (``view``): the state,
read-only (changing a set, mapping, job or view attribute raises at that line). Wall time,
for time-bounded searches and decision timings, comes from the injected :attr:`Policy.clock`.

This module is the scheduler core's side of the contract: the drivers (dispatch, daemon,
simulator) depend on it and on nothing of ``batpolicy.policies``. Policies subclass
:class:`Policy` through :mod:`batpolicy.policies.base`, which adds what policies share
(placement parameters) on top of the toolkit.
"""

from __future__ import annotations

import math
from collections.abc import Callable, Iterable, Mapping
from dataclasses import dataclass
from typing import Any, ClassVar

from batpolicy.errors import ConfigError
from batpolicy.protocol import types as t
from batpolicy.scheduler.clock import WallClock
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

Decisions = Iterable[t.Decision] | None


def _parse_bool(text: str) -> bool:
    """Parse a boolean parameter value.

    >>> _parse_bool("yes"), _parse_bool("0")
    (True, False)
    """
    low = text.strip().lower()
    if low in ("1", "true", "yes", "on"):
        return True
    if low in ("0", "false", "no", "off"):
        return False
    raise ValueError(f"not a boolean: {text!r}")


@dataclass(frozen=True, slots=True)
class Parameter:
    """A policy parameter: name, type, default, help, and optional allowed values."""

    name: str
    type: Callable[[str], Any]
    default: Any
    help: str
    choices: tuple[Any, ...] | None = None

    def parse(self, text: str, policy: str) -> Any:
        """Convert a ``--param`` string, raising :class:`ConfigError` naming the parameter."""
        conv = _parse_bool if self.type is bool and isinstance(text, str) else self.type
        try:
            value = conv(text)
        except (TypeError, ValueError) as exc:
            raise ConfigError(
                f"policy '{policy}': parameter '{self.name}' = {text!r}: {exc}") from None
        if self.choices is not None and value not in self.choices:
            raise ConfigError(f"policy '{policy}': parameter '{self.name}' = {value!r} is not "
                              f"one of {', '.join(map(str, self.choices))}")
        return value

    def describe(self) -> str:
        """One line for ``batpolicy policies``."""
        kind = getattr(self.type, "__name__", str(self.type))
        extra = f" (one of {', '.join(map(str, self.choices))})" if self.choices else ""
        return f"{self.name}: {kind} = {self.default!r}  {self.help}{extra}"


def percentile(sorted_values: Iterable[float], q: float) -> float:
    """Nearest-rank ``q``-th percentile (0 < q ≤ 100) of ascending values; 0 if none.

    What policies' ``stats()`` report decision times with.

    >>> percentile([1.0, 2.0, 3.0, 4.0], 50), percentile([1.0, 2.0, 3.0, 4.0], 99)
    (2.0, 4.0)
    >>> percentile([], 99)
    0.0
    """
    values = list(sorted_values)
    if not values:
        return 0.0
    return values[max(0, math.ceil(q / 100 * len(values)) - 1)]


class Policy:
    """Base class of every policy; override the hooks you need and :meth:`decide`."""

    #: Registry name, used by ``--policy``.
    name: ClassVar[str] = ""
    #: Declared parameters, set with ``--param KEY=VALUE``.
    parameters: ClassVar[tuple[Parameter, ...]] = ()
    #: Whether the policy registers jobs (``batpolicy simulate`` then enables dynamic jobs).
    needs_dynamic_jobs: bool = False
    #: Whether the policy switches machines' power states (SET_RESOURCE_STATE), which
    #: Batsim refuses without ``-E``: ``batpolicy simulate`` and campaigns refuse to run
    #: it without the energy model instead of failing at its first switch.
    needs_energy: bool = False
    #: Whether the policy reads jobs once they completed or were rejected
    #: (``view.jobs``, ``view.job(id)``). A policy that does not says False: the state
    #: then forgets a job as it ends, and a run's memory is that of the jobs alive.
    reads_finished_jobs: bool = True

    def __init__(self, params: Mapping[str, Any] | None = None) -> None:
        #: Wall clock for time-bounded searches; drivers or tests may replace it.
        self.clock: Callable[[], float] = WallClock()
        given = dict(params or {})
        declared = {p.name: p for p in self.parameters}
        unknown = sorted(set(given) - set(declared))
        if unknown:
            known = ", ".join(declared) or "none"
            raise ConfigError(f"policy '{self.name}' has no parameter {', '.join(unknown)} "
                              f"(its parameters: {known})")
        self.params: dict[str, Any] = {}
        for p in self.parameters:
            value = given.get(p.name, p.default)
            if isinstance(value, str) or p.choices is not None:
                value = p.parse(value, self.name)
            self.params[p.name] = value

    # ------------------------------------------------------------------------ hooks
    def on_simulation_begins(self, view: PolicyView) -> Decisions:
        """The platform and configuration are known (``view`` holds them)."""
        return None

    def on_job_submitted(self, job: Job, view: PolicyView) -> Decisions:
        """A new job waits (static submission or dynamic registration)."""
        return None

    def on_job_completed(self, job: Job, view: PolicyView) -> Decisions:
        """A running job ended (``job.final_state`` says how); its machines are free."""
        return None

    def on_job_killed(self, event: t.JobKilled, view: PolicyView) -> Decisions:
        """A KILL_JOB was acknowledged; completions of killed jobs came before."""
        return None

    def on_resources_changed(self, event: t.Event, view: PolicyView) -> Decisions:
        """Machines became (un)available or changed power state."""
        return None

    def on_requested_call(self, now: float, view: PolicyView) -> Decisions:
        """A CALL_ME_LATER fired."""
        return None

    def on_notify(self, event: t.Notify, view: PolicyView) -> Decisions:
        """Any other NOTIFY, forwarded external events included."""
        return None

    def on_simulation_ends(self, view: PolicyView) -> Decisions:
        """Batsim ends the simulation; decisions returned here are not sent."""
        return None

    # ----------------------------------------------------------------------- decide
    def decide(self, now: float, view: PolicyView) -> list[t.Decision]:
        """Return the decisions to send for this message (after every hook ran)."""
        return []

    def stats(self) -> dict[str, Any]:
        """Per-policy statistics added to ``metrics.json`` (empty by default)."""
        return {}
