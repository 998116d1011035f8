"""The policy interface: hooks that observe, one ``decide`` that answers.

:class:`Policy`, :class:`Parameter` and :data:`Decisions` are the scheduler core's
contract (:mod:`batpolicy.scheduler.contract`), re-exported here where policies import
them; this module adds what placing policies share (:data:`PLACEMENT_PARAMETERS`,
:class:`Placement`). A policy is a pure decider. The driver (the daemon or the embedded
simulator) applies every event of a Batsim message to the state, calls the matching hook
after each one, then calls :meth:`Policy.decide` once, and checks every returned decision
before applying it. Hooks may return decisions too (they are sent before those of
``decide``, in order); most policies only update their own bookkeeping in hooks (queue,
counters) and answer in ``decide``.

Nothing in a policy knows which driver runs it: no sockets, no clocks, no JSON.
Hooks and ``decide`` receive a :class:`~batpolicy.scheduler.view.PolicyView` (``view``): the state,
read-only (changing a set, mapping, job or view attribute raises at that line).

Example — a complete policy that starts jobs in submission order, skipping none::

    from batpolicy.policies.base import Parameter, Policy
    from batpolicy.protocol.types import ExecuteJob, RejectJob
    from batpolicy.policies.toolkit.allocation import take_lowest

    class Strict(Policy):
        '''Start waiting jobs in submission order while the head fits.'''

        name = "strict"
        parameters = (Parameter("max_res", int, 0, "reject jobs larger than this (0: none)"),)

        def decide(self, now, view):
            decisions, free = [], view.free
            for job in view.waiting.values():
                if job.res > view.nb_machines or 0 < self.params["max_res"] < job.res:
                    decisions.append(RejectJob(job.id))
                elif job.res <= len(free):
                    alloc = take_lowest(free, job.res)
                    free = free - alloc
                    decisions.append(ExecuteJob(job.id, alloc))
                else:
                    break
            return decisions
"""

from __future__ import annotations

from collections.abc import Mapping
from typing import Any

from batpolicy.platforms.model import Platform
from batpolicy.policies.toolkit.allocation import (
    ALLOCATORS,
    Allocator,
    is_plain_lowest,
    make_allocator,
)
from batpolicy.protocol.intervals import MachineSet
from batpolicy.scheduler.contract import Decisions, Parameter, Policy, percentile
from batpolicy.scheduler.jobs import Job
from batpolicy.scheduler.view import PolicyView

__all__ = ["PLACEMENT_PARAMETERS", "Decisions", "Parameter", "Placement", "Policy", "percentile",
           "wall_clock_stats"]


#: ``allocator`` and ``one_group``: the parameters of every policy that places jobs
#: (:class:`Placement`, :mod:`batpolicy.policies.toolkit.allocation`).
PLACEMENT_PARAMETERS = (
    Parameter("allocator", str, "lowest", "which free machines a job gets: the lowest ids "
              "(batsched's choice), one group (tightest fit), the fewest groups, or the "
              "job's preferred groups first", choices=tuple(ALLOCATORS)),
    Parameter("one_group", bool, False, "a job runs inside one platform group (cluster, "
              "rack, multi-CPU machine) or waits; larger jobs are rejected"),
)


class Placement:
    """A policy's allocator, with what it needs from the view (platform, group sizes).

    Built from the :data:`PLACEMENT_PARAMETERS` values. ``plain`` is True for the default
    (unconstrained lowest ids), for which policies keep their count-based fast paths.

    >>> Placement({"allocator": "lowest", "one_group": False}).plain
    True
    """

    def __init__(self, params: Mapping[str, Any]) -> None:
        self.allocator: Allocator = make_allocator(params["allocator"], params["one_group"])
        self.plain = is_plain_lowest(self.allocator)
        self._largest: tuple[Any, int, int] | None = None

    def platform(self, view: PolicyView) -> Platform | None:
        """The platform if the allocator reads it, else None. Runtime complexity: O(1)."""
        return view.platform if self.allocator.needs_platform else None

    def allocate(self, free: MachineSet, job: Job, view: PolicyView) -> MachineSet | None:
        """``job.res`` machines of ``free``, or None. Runtime complexity: the allocator's."""
        return self.allocator.allocate(free, job, self.platform(view))

    def can_ever_run(self, job: Job, view: PolicyView) -> bool:
        """False for a job asking for no machine, or more than the view (or a group) holds.

        With ``one_group`` the bound is the largest group of the view's machines.
        Runtime complexity: O(1), O(G·k) once per platform with ``one_group``.
        """
        if not self.allocator.one_group:
            return 0 < job.res <= view.nb_machines
        if job.res <= 0:
            return False
        platform, nb_machines = view.platform, view.nb_machines
        cached = self._largest
        if cached is None or cached[0] is not platform or cached[1] != nb_machines:
            mine = view.all_machines
            groups = getattr(self.allocator, "groups", None)  # every built-in allocator's
            sets = groups(platform).sets if groups is not None else [("", mine)]
            largest = max((len(machines & mine) for _, machines in sets),
                          default=0)
            cached = self._largest = (platform, nb_machines, largest)
        return job.res <= cached[2]


def wall_clock_stats(**bounds_ms: float) -> dict[str, Any]:
    """Stats that flag a run bounded by wall-clock time as not reproducible.

    A search cut by elapsed time stops at a different node on a faster or busier machine,
    so two runs of the same inputs may differ. Policies whose defaults are bounded by
    counted work (nodes, rounds) add this to :meth:`Policy.stats` for the parameters
    (``name=milliseconds``) that set a wall-clock bound; empty when none is set (> 0), so
    a default run's stats, and the tables built from them, carry nothing extra.

    >>> wall_clock_stats(time_bound_ms=0.0)
    {}
    >>> wall_clock_stats(time_bound_ms=20.0)
    {'reproducible': False, 'nondeterministic_bound': 'time_bound_ms=20.0'}
    """
    set_ = [f"{name}={value}" for name, value in sorted(bounds_ms.items()) if value > 0]
    if not set_:
        return {}
    return {"reproducible": False, "nondeterministic_bound": ",".join(set_)}
